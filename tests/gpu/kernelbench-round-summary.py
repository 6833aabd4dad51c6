#!/usr/bin/env python3
"""The summary of a GPU round of KernelBench user types run together in one `autokernel run`
(tests/gpu/gpu-kernelbench.sh kb6): per type, its verdicts, what was kept or reverted and the memory
it took; then the run's out-of-memory and HARNESS_ERROR lines, and whether the round met its claim.

usage: tests/gpu/kernelbench-round-summary.py RUN_DIR RUN_LOG MEMORY_LOG [--min-big-gb G] [--big N] TYPE...

RUN_DIR     the run folder (results.tsv, experiments/NNNN-<tag>.verdict.json)
RUN_LOG     the output of `autokernel run` (the worker's and the reference processes' logs in it)
MEMORY_LOG  tests/gpu/gpu-memory-sampler.py's samples
TYPE...     the user types the round expects, each with at least one row

The claim: every type's first file passes and is kept (the baseline every later file is timed
against), every row passes (every file served is honest: a revert is for speed only), no text of
the run says out of memory, no HARNESS_ERROR row, and at least N types (--big, default 2) whose
reference process peaked at G GB or more (--min-big-gb, default 30; 1 GB = 10^9 bytes).

A reference process is found in the memory samples as a process other than the worker whose
memory first showed while one type's experiment ran (an experiment runs from its verdict file's
time less its `seconds` to that time). Where nvidia-smi shows no processes (a container with its
own PID namespace) the peaks are unknown and the claim's last part cannot be judged.
Exit status: 0 the claim met, 1 not met or not judged, 2 bad usage or unreadable input.
"""
import json
import os
import re
import sys

OOM = re.compile(r"out of memory|OUT_OF_MEMORY|OutOfMemoryError", re.I)
MIB = 1 << 20


def read_results(run_dir):
    path = os.path.join(run_dir, "results.tsv")
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines:
        raise ValueError("%s is empty" % path)
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:] if line.strip()]
    rows.sort(key=lambda r: int(r["experiment"]))
    return rows


def verdict_path(run_dir, row):
    return os.path.join(run_dir, "experiments", "%04d-%s.verdict.json" % (int(row["experiment"]), row["tag"]))


def peak_fields(obj, found, prefix=""):
    """Every number under a key that names a peak (peak_vram_mb, a reference's peak, ...)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = prefix + k
            if isinstance(v, (int, float)) and not isinstance(v, bool) and "peak" in k.lower() and "pct" not in k.lower():
                found[key] = max(found.get(key, 0.0), float(v))
            else:
                peak_fields(v, found, key + ".")
    elif isinstance(obj, list):
        for v in obj:
            peak_fields(v, found, prefix)


def read_samples(path):
    """[(time, total MiB or None, {pid: (MiB, name)})] in time order."""
    samples = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 2:
                    continue
                procs = {}
                for entry in (parts[2].split(",") if len(parts) > 2 else []):
                    fields = entry.split("=")
                    if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
                        procs[fields[0]] = (int(fields[1]), fields[2] if len(fields) > 2 else "?")
                samples.append((float(parts[0]), int(parts[1]) if parts[1].isdigit() else None, procs))
    except OSError:
        pass
    return samples


def windows(run_dir, rows):
    """[(start, end, type)] of the experiments whose verdict file exists."""
    out = []
    for r in rows:
        p = verdict_path(run_dir, r)
        if os.path.exists(p):
            end = os.path.getmtime(p)
            out.append((end - float(r.get("seconds") or 0), end, r["kernel_type"]))
    return out


def type_at(t, spans):
    """The type whose experiment ran at t; else the next one to start (a process starts just before)."""
    for start, end, kind in spans:
        if start - 1 <= t <= end + 1:
            return kind
    later = [(start, kind) for start, _, kind in spans if start > t]
    return min(later)[1] if later else None


def oom_lines(paths):
    hits = []
    for p in paths:
        try:
            with open(p, errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if OOM.search(line):
                        hits.append("%s:%d: %s" % (os.path.basename(p), n, line.strip()[:200]))
        except OSError:
            continue
    return hits


def main(argv):
    args = argv[1:]
    min_gb, big_needed = 30.0, 2
    for flag in ("--min-big-gb", "--big"):
        if flag in args:
            i = args.index(flag)
            value = args[i + 1] if i + 1 < len(args) else ""
            try:
                if flag == "--big":
                    big_needed = int(value)
                else:
                    min_gb = float(value)
            except ValueError:
                sys.stderr.write("%s %r: expected a number\n" % (flag, value))
                return 2
            del args[i:i + 2]
    if len(args) < 4:
        sys.stderr.write(__doc__)
        return 2
    run_dir, run_log, memory_log, types = args[0], args[1], args[2], args[3:]
    try:
        rows = read_results(run_dir)
    except (OSError, ValueError) as e:
        print("no results: %s" % e)
        return 2

    samples = read_samples(memory_log)
    spans = windows(run_dir, rows)
    workers = {pid for _, _, procs in samples for pid, (_, name) in procs.items() if name == "autokernel"}
    ref_peak, pid_type = {}, {}
    for t, _, procs in samples:
        for pid, (mib, name) in procs.items():
            if pid in workers:
                continue
            if pid not in pid_type:
                pid_type[pid] = type_at(t, spans)
            kind = pid_type[pid]
            ref_peak[kind] = max(ref_peak.get(kind, 0), mib)
    seen_processes = any(procs for _, _, procs in samples)

    verdict_files = []
    problems = []
    table = []
    for kind in types:
        mine = [r for r in rows if r["kernel_type"] == kind]
        if not mine:
            problems.append("%s: no row (never evaluated)" % kind)
            table.append([kind, "0", "-", "-", "-", "-", "not evaluated", "-", "-", "-", "-", "-", "-"])
            continue
        count = {}
        for r in mine:
            count[r["correctness"]] = count.get(r["correctness"], 0) + 1
        first = mine[0]
        kept = sum(r["kept"] == "yes" for r in mine)
        slower = sum(r["kept"] != "yes" and r["correctness"] == "PASS" for r in mine)
        failing = [r for r in mine if r["correctness"] != "PASS"]
        peaks = {}
        for r in mine:
            p = verdict_path(run_dir, r)
            verdict_files.append(p)
            try:
                with open(p) as f:
                    peak_fields(json.load(f), peaks)
            except (OSError, ValueError):
                pass
        best = max((float(r["speedup_vs_baseline"]) for r in mine if r["kept"] == "yes"), default=0.0)
        if first["correctness"] != "PASS" or first["kept"] != "yes":
            problems.append("%s: its first file was %s%s" % (kind, first["correctness"], "" if first["kept"] == "yes" else ", not kept"))
        for r in failing:
            problems.append("%s: experiment %s was %s: %s" % (kind, r["experiment"], r["correctness"], (r.get("failure") or r.get("description") or "")[:160]))
        other = sum(v for k, v in count.items() if k not in ("PASS", "FAIL", "HARNESS_ERROR"))
        ref = ref_peak.get(kind)
        during = [used for t, used, _ in samples if used is not None and type_at(t, spans) == kind
                  and any(start - 1 <= t <= end + 1 for start, end, _ in spans)]
        table.append([kind, str(len(mine)), str(count.get("PASS", 0)), str(count.get("FAIL", 0)),
                      str(count.get("HARNESS_ERROR", 0)), str(other),
                      "%s %s" % (first["correctness"], "kept" if first["kept"] == "yes" else "reverted"),
                      str(kept), str(slower), "%.2fx" % best,
                      "%.0f" % peaks.get("peak_vram_mb", 0.0),
                      "%d" % ref if ref is not None else "?",
                      "%d" % max(during) if during else "?"])
        extra = {k: v for k, v in peaks.items() if k != "peak_vram_mb"}
        if extra:
            table[-1].append(" ".join("%s=%.0f" % kv for kv in sorted(extra.items())))

    head = ["type", "rows", "PASS", "FAIL", "HERR", "other", "first file", "kept", "slower",
            "best vs eager", "pool MiB", "ref MiB", "GPU MiB", "verdict peaks"]
    widths = [max(len(str(r[i])) if i < len(r) else 0 for r in table + [head]) for i in range(len(head))]
    print("per type (HERR = HARNESS_ERROR; slower = passed, reverted as not faster; pool MiB = the worker's "
          "pool, peak_vram_mb; ref MiB = the type's largest process but the worker in nvidia-smi, its reference "
          "process; GPU MiB = the GPU's memory used at most while the type's experiments ran, every process)")
    for r in [head] + table:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())

    totals = [(t, used) for t, used, _ in samples if used is not None]
    if totals:
        t_peak, used_peak = max(totals, key=lambda x: x[1])
        print("GPU memory used: peak %d MiB (%.1f GB), %.0f s into the samples, %d samples" %
              (used_peak, used_peak * MIB / 1e9, t_peak - samples[0][0], len(samples)))
    else:
        print("GPU memory used: no samples (was nvidia-smi there?)")
    if seen_processes:
        for pid in sorted(pid_type, key=lambda p: min(t for t, _, procs in samples if p in procs)):
            mib = max(procs[pid][0] for _, _, procs in samples if pid in procs)
            name = next(procs[pid][1] for _, _, procs in samples if pid in procs)
            print("  process %s (%s): peak %d MiB, first seen during %s" % (pid, name, mib, pid_type[pid]))
        for pid in sorted(workers):
            mib = max(procs[pid][0] for _, _, procs in samples if pid in procs)
            print("  process %s (autokernel, the worker): peak %d MiB" % (pid, mib))
    else:
        print("  nvidia-smi showed no processes: the reference processes' peaks are unknown")

    hits = oom_lines([run_log] + verdict_files + [os.path.join(run_dir, "results.tsv")])
    print("out-of-memory lines: %d" % len(hits))
    for h in hits[:10]:
        print("  " + h)
    herr = [r for r in rows if r["correctness"] == "HARNESS_ERROR"]
    print("HARNESS_ERROR rows: %d" % len(herr))
    if hits:
        problems.append("%d lines say out of memory" % len(hits))
    limit_mib = min_gb * 1e9 / MIB
    big = [k for k in types if ref_peak.get(k, 0) >= limit_mib]
    print("reference peaks of %.0f GB or more: %s" % (min_gb, ", ".join(big) or "none"))
    judged = True
    if not seen_processes:
        judged = False
        problems.append("the reference processes' peaks are unknown (no per-process memory in the samples)")
    elif len(big) < big_needed:
        problems.append("%d types reached %.0f GB in their reference process, fewer than %d" % (len(big), min_gb, big_needed))
    print("claim: %s" % ("MET" if not problems else "NOT MET" if judged else "NOT JUDGED"))
    for p in problems:
        print("  - " + p)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
