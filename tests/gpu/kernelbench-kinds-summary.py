#!/usr/bin/env python3
"""The summary of the launch-plan problems through the loop (tests/gpu/gpu-kernelbench.sh kinds): for
each problem, the verdicts of the three files the scripted server served it in order (its honest
file, then its .wrong and its .cheating one), the honest file's speedups against PyTorch eager and
torch.compile, and fast_p over every problem of the runs given; then each run's KernelBench section
of its report.md, as `autokernel report` wrote it.

usage: tests/gpu/kernelbench-kinds-summary.py [--expect TYPE,...] RUN_DIR...

RUN_DIR   a run folder (results.tsv, experiments/NNNN-<tag>.verdict.json, report.md when reported)
--expect  the user types the runs should hold: one missing is a problem not evaluated

A problem is as expected when its honest file passed and was kept, and its wrong and its cheating
file were each judged and neither passed nor was kept. The server answers a type's requests in a
fixed order whatever the verdicts, so a type's n-th row is the n-th file served (an honest file
that fails is followed by the wrong one as the next first file: the rows say so).
Exit status: 0 every problem as expected, 1 not, 2 bad usage or a run folder without results.
"""
import json
import os
import sys

SERVED = ("honest", "wrong", "cheating")
FAST_P = (0.0, 1.0, 1.5, 2.0)


def read_results(run_dir):
    path = os.path.join(run_dir, "results.tsv")
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines:
        raise ValueError("%s is empty" % path)
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]
    return sorted(rows, key=lambda r: int(r["experiment"]))


def read_verdict(run_dir, row):
    path = os.path.join(run_dir, "experiments", "%04d-%s.verdict.json" % (int(row["experiment"]), row["tag"]))
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def problem(run_dir, tag, rows):
    """One type's three served files: verdict, kept, what failed; the honest file's times."""
    p = {"tag": tag, "run": run_dir, "files": {}, "us": 0.0, "eager_us": 0.0, "compile_us": 0.0, "correct": False}
    for role, row in zip(SERVED, rows):
        p["files"][role] = {"correctness": row["correctness"], "kept": row["kept"] == "yes",
                            "why": (row.get("failure") or row.get("description") or "").strip()}
    honest = rows[0] if rows else None
    if honest is not None and honest["correctness"] == "PASS" and honest["kept"] == "yes":
        v = read_verdict(run_dir, honest)
        p["correct"] = True
        p["us"] = number(honest["latency_us"])
        p["eager_us"] = number(v.get("reference_us"))
        p["compile_us"] = number(v.get("torch_compile_us"))
        p["kernelbench_pass"] = v.get("kernelbench_pass")
    p["as_expected"] = (p["correct"] and all(r in p["files"] for r in SERVED)
                        and all(p["files"][r]["correctness"] != "PASS" and not p["files"][r]["kept"] for r in SERVED[1:]))
    return p


def speedup(baseline_us, us):
    return baseline_us / us if baseline_us > 0 and us > 0 else 0.0


def verdict_cell(f):
    if f is None:
        return "not served"
    return f["correctness"] + (" kept" if f["kept"] else "")


def report_section(run_dir):
    """The KernelBench section of the run's report.md, or a line saying there is none."""
    path = os.path.join(run_dir, "report.md")
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return "(no %s: `autokernel report --run %s` was not run or failed)\n" % (path, run_dir)
    start = text.find("## KernelBench")
    if start < 0:
        return "(%s has no KernelBench section)\n" % path
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)].rstrip() + "\n"


def summary(run_dirs, expected):
    problems, lines = [], []
    for run_dir in run_dirs:
        rows = read_results(run_dir)
        tags = []
        for r in rows:
            if r["kernel_type"].startswith("kb_") and r["tag"] not in tags:
                tags.append(r["tag"])
        for tag in tags:
            problems.append(problem(run_dir, tag, [r for r in rows if r["tag"] == tag]))
    seen = {p["tag"] for p in problems}
    missing = [t for t in expected if t not in seen]

    lines.append("| problem | honest | µs | eager µs | torch.compile µs | vs eager | vs compile | wrong | cheating | as expected |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for p in problems:
        f = p["files"]
        lines.append("| %s | %s | %.2f | %.2f | %s | %.3fx | %s | %s | %s | %s |" % (
            p["tag"], verdict_cell(f.get("honest")), p["us"], p["eager_us"],
            "%.2f" % p["compile_us"] if p["compile_us"] > 0 else "-", speedup(p["eager_us"], p["us"]),
            "%.3fx" % speedup(p["compile_us"], p["us"]) if p["compile_us"] > 0 else "-",
            verdict_cell(f.get("wrong")), verdict_cell(f.get("cheating")), "yes" if p["as_expected"] else "NO"))
    for t in missing:
        lines.append("| %s | not evaluated | | | | | | | | NO |" % t)
    lines.append("")
    for p in problems:
        for role in SERVED:
            f = p["files"].get(role)
            if f is not None and (role != "honest" or f["correctness"] != "PASS"):
                lines.append("%s %s: %s: %s" % (p["tag"], role, f["correctness"], f["why"][:200]))
    n = len(problems) + len(missing)
    lines.append("")
    lines.append("fast_p over the %d problems (p = 0: correct alone; a problem with no time counts as not fast):" % n)
    lines.append("| p | vs eager | vs torch.compile |")
    lines.append("|---|---|---|")
    for fp in FAST_P:
        eager = sum(p["correct"] and speedup(p["eager_us"], p["us"]) > fp for p in problems)
        comp = sum(p["correct"] and speedup(p["compile_us"], p["us"]) > fp for p in problems)
        lines.append("| %g | %d/%d | %d/%d |" % (fp, eager, n, comp, n))
    for run_dir in run_dirs:
        lines.append("")
        lines.append("%s, its report:" % run_dir)
        lines.append(report_section(run_dir).rstrip())
    ok = not missing and problems and all(p["as_expected"] for p in problems)
    lines.append("")
    lines.append("every problem as expected: %s" % ("yes" if ok else "NO"))
    return "\n".join(lines) + "\n", bool(ok)


def main(argv):
    args = argv[1:]
    expected = []
    if "--expect" in args:
        i = args.index("--expect")
        if i + 1 >= len(args):
            sys.stderr.write(__doc__)
            return 2
        expected = [t for t in args[i + 1].split(",") if t]
        del args[i:i + 2]
    if not args:
        sys.stderr.write(__doc__)
        return 2
    try:
        text, ok = summary(args, expected)
    except (OSError, ValueError, KeyError) as e:
        print("no summary: %s" % e)
        return 2
    sys.stdout.write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
