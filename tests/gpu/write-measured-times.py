#!/usr/bin/env python3
"""Writes the measured times of tests/gpu/gpu-bench-variants.sh into the kernel files' headers.

usage: tests/gpu/write-measured-times.py TSV [--root DIR]

TSV has the columns file, type, median_us, spread, device, date (a header line first); `file` is
a path relative to DIR (default: the repository holding this script). Each file's one line
`// measured: ...` becomes the TSV's measurement; nothing else in the file changes, and a second
run with the same TSV changes nothing. Every row and every file is checked before any is written.
Exit 0 when done, 1 when a file cannot be read or written, 2 on bad usage or bad input (a
malformed row, a file outside DIR, a file with no or several `// measured:` lines)."""
import argparse
import os
import re
import sys

COLUMNS = ["file", "type", "median_us", "spread", "device", "date"]
MEASURED = re.compile(r"^// measured:.*$")


class BadInput(Exception):
    pass


def measured_line(row):
    """The header line for one TSV row: the median and spread of a file that passed, else its verdict."""
    where = f"fp16 at the benchmark shape, {row['device']}, {row['date']}"
    try:
        median = float(row["median_us"])
    except ValueError:
        return f"// measured: {row['median_us']} (no time), {where}"
    spread = float(row["spread"]) * 100 if row["spread"] else 0.0
    return f"// measured: {median:.2f} us median, spread {spread:.1f}% ((p90 - p10) / median), {where}"


def read_rows(tsv_path):
    with open(tsv_path, encoding="utf-8") as f:
        lines = [line.rstrip("\n").rstrip("\r") for line in f if line.strip()]
    if not lines or lines[0].split("\t") != COLUMNS:
        raise BadInput(f"{tsv_path}: the first line is not the header {chr(9).join(COLUMNS)!r}")
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise BadInput(f"{tsv_path}:{n}: {len(cells)} columns: expected {len(COLUMNS)} ({', '.join(COLUMNS)})")
        row = dict(zip(COLUMNS, cells))
        if row["spread"]:
            try:
                float(row["spread"])
            except ValueError:
                raise BadInput(f"{tsv_path}:{n}: spread {row['spread']!r}: expected a number or nothing")
        rows.append((n, row))
    return rows


def plan(rows, root, tsv_path):
    """(path, old text, new text) for every row, every problem found before anything is written."""
    root = os.path.realpath(root)
    out = []
    for n, row in rows:
        path = os.path.realpath(os.path.join(root, row["file"]))
        if os.path.commonpath([root, path]) != root:
            raise BadInput(f"{tsv_path}:{n}: {row['file']} is outside {root}: expected a path in the repository")
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
        lines = text.splitlines(keepends=True)
        at = [i for i, line in enumerate(lines) if MEASURED.match(line.rstrip("\r\n"))]
        if len(at) != 1:
            raise BadInput(f"{row['file']}: {len(at)} lines start with '// measured:': expected exactly one in its header")
        i = at[0]
        ending = lines[i][len(lines[i].rstrip("\r\n")):]
        lines[i] = measured_line(row) + ending
        out.append((path, text, "".join(lines)))
    return out


def main(argv):
    parser = argparse.ArgumentParser(description="Writes measured times into the kernel files' `// measured:` lines.")
    parser.add_argument("tsv", help="the TSV tests/gpu/gpu-bench-variants.sh wrote")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                        help="the folder the TSV's paths are relative to (default: the repository)")
    args = parser.parse_args(argv)
    try:
        changes = plan(read_rows(args.tsv), args.root, args.tsv)
    except BadInput as e:
        print(f"write-measured-times.py: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"write-measured-times.py: {e}", file=sys.stderr)
        return 1
    written = 0
    for path, old, new in changes:
        if new == old:
            continue
        try:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(new)
        except OSError as e:
            print(f"write-measured-times.py: {path}: {e}", file=sys.stderr)
            return 1
        written += 1
    print(f"{written} of {len(changes)} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
