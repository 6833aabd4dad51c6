#!/usr/bin/env python3
"""The scaling measurement's numbers, from the folder tests/gpu/gpu-scaling.sh fills: for each leg
(1, 2, 4, 8 GPUs) the experiments per hour over the whole run and over the window when every GPU
was busy, the verdicts paired with a best replaced while they ran, reverts per kept best and after
the last one, the loop thread's time per decision; where the GPUs' time went (judging, or idle and
why: state.json's per-GPU seconds); then each kernel's best per leg, as the leg measured it and
benched again on one GPU. Prints markdown (docs/results.md takes it as it is).

    python3 tests/gpu/summarize-scaling.py DIR

DIR holds, per leg N: leg-N-results.tsv, leg-N-state.json, leg-N-daemon.log, and wall.txt
("N wall_ms" lines); rebench.jsonl (bench --json lines, each with the file it timed) when the
bests were benched again."""
import csv
import json
import os
import re
import statistics
import sys
import tarfile
from datetime import datetime

# "2026-11-24 02:38:15.215 info  [23940] experiment 12 rmsnorm-2 [GPU 3]: ..."
_ROW_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \w+ +\[\d+\] experiment (\d+) (\S+?)( \[GPU (\d+)\])?: ")


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def finish_times(log_path):
    """{experiment: (seconds since the log's first line, GPU)} for every recorded experiment: the
    log line the loop writes when it records a row (PASS or a failure), not the judge-again notes."""
    times, first = {}, None
    with open(log_path, errors="replace") as f:
        for line in f:
            stamp = line[:23]
            try:
                t = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").timestamp()
            except ValueError:
                continue
            first = t if first is None else first
            m = _ROW_LINE.match(line)
            if m and ("-> kept" in line or "-> reverted" in line):
                times[int(m.group(2))] = (t - first, int(m.group(5) or 0))
    return times


def busy_window(rows, times):
    """(start, end, experiments finished in it) of the window when every GPU that worked had work:
    from the latest first start (a GPU's first finish less its experiment's seconds) to the
    earliest last finish; None when the window is empty."""
    seconds = {int(r["experiment"]): float(r["seconds"] or 0) for r in rows}
    per_gpu = {}
    for n, (t, gpu) in times.items():
        per_gpu.setdefault(gpu, []).append((t, n))
    if not per_gpu:
        return None
    start = max(min(per_gpu[g])[0] - seconds.get(min(per_gpu[g])[1], 0) for g in per_gpu)
    end = min(max(per_gpu[g])[0] for g in per_gpu)
    if end <= start:
        return None
    inside = sum(1 for t, _ in times.values() if start < t <= end)
    return start, end, inside


def reverts_per_best(rows):
    """Per kernel, the reverts between kept bests (in the order rows were recorded): ([counts before
    each keep after the first], [reverts after the last keep]), over all kernels."""
    by_tag = {}
    for r in rows:
        by_tag.setdefault(r["tag"], []).append(r)
    between, tails = [], []
    for tag_rows in by_tag.values():
        count, keeps = 0, 0
        for r in tag_rows:
            if r["kept"] == "yes":
                if keeps:
                    between.append(count)
                keeps, count = keeps + 1, 0
            elif r["correctness"] not in ("HARNESS_ERROR", "BEST_PASS", "BEST_REPLACED") \
                    and not r["description"].startswith("the best judged again"):
                count += 1
        tails.append(count)
    return between, tails


def bests(rows):
    """{tag: the latency of its last kept row (µs)}."""
    out = {}
    for r in rows:
        if r["kept"] == "yes":
            out[r["tag"]] = float(r["latency_us"])
    return out


def leg_numbers(folder, n, wall_ms):
    rows = read_rows(os.path.join(folder, f"leg-{n}-results.tsv"))
    with open(os.path.join(folder, f"leg-{n}-state.json")) as f:
        state = json.load(f)
    times = finish_times(os.path.join(folder, f"leg-{n}-daemon.log"))
    window = busy_window(rows, times)
    between, tails = reverts_per_best(rows)
    span = (max(t for t, _ in times.values()) - min(t for t, _ in times.values())) if len(times) > 1 else 0
    return {
        "gpus": n, "experiments": len(rows), "wall_s": wall_ms / 1000 if wall_ms else None,
        "per_hour_whole": len(rows) / (wall_ms / 1000) * 3600 if wall_ms else None,
        "per_hour_rows": (len(times) - 1) / span * 3600 if span else None,
        "per_hour_busy": window[2] / (window[1] - window[0]) * 3600 if window else None,
        "busy_s": window[1] - window[0] if window else 0.0,
        "stale": state.get("stale_verdicts", {}).get("count"),
        "judged_again": state.get("stale_verdicts", {}).get("judged_again"),
        "noisy": state.get("noisy_verdicts", {}).get("judged_again"),
        "decision_median_ms": state.get("decisions", {}).get("median_ms"),
        "decision_max_ms": state.get("decisions", {}).get("max_ms"),
        "kept": sum(1 for r in rows if r["kept"] == "yes" and not r["description"].startswith("baseline")),
        "reverts_per_best": statistics.mean(between) if between else 0.0,
        "tail_reverts_mean": statistics.mean(tails) if tails else 0.0, "tail_reverts_max": max(tails, default=0),
        "bests": bests(rows), "status": state.get("status"),
        "gpu_time": gpu_time(state), "candidate_s": mean_seconds(rows),
        "driver": driver_times(os.path.join(folder, f"driver-times-{n}")),
        "stages": stage_medians(os.path.join(folder, f"leg-{n}-verdicts.tar"), rows),
    }


def stage_medians(tar_path, rows):
    """{stage: median seconds} over the candidates' verdicts in the leg's tar of experiments/
    (starters and the best judged again left out), "total" among them; {} without the tar. Which
    stage slows when more GPUs share the box: the compile and the CPU references are the host's,
    the benchmark the driver's and the GPU's."""
    if not os.path.exists(tar_path):
        return {}
    candidates = {int(r["experiment"]) for r in rows
                  if not r["description"].startswith(("baseline", "the best judged again"))}
    seconds = {}
    with tarfile.open(tar_path) as tar:
        for member in tar.getmembers():
            m = re.search(r"(\d+)-[^/]*\.verdict\.json$", member.name)
            if not m or int(m.group(1)) not in candidates:
                continue
            try:
                v = json.load(tar.extractfile(member))
            except (ValueError, AttributeError, TypeError):
                continue
            for stage in v.get("stages") or []:
                if isinstance(stage, dict) and "name" in stage and "seconds" in stage:
                    seconds.setdefault(stage["name"], []).append(float(stage["seconds"]))
            if "total_seconds" in v:
                seconds.setdefault("total", []).append(float(v["total_seconds"]))
    return {k: statistics.median(v) for k, v in seconds.items()}


def driver_times(folder):
    """{call: [calls, total ms, calls over 1 ms]} summed over the leg's workers' files
    (harness/gpu/driver_call_times.hpp); {} when the leg was run without them."""
    out = {}
    if not os.path.isdir(folder):
        return out
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".tsv"):
            continue
        with open(os.path.join(folder, name), newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                try:
                    calls, total, slow = int(r["calls"]), float(r["total_ms"]), int(r["over_1ms"])
                except (KeyError, TypeError, ValueError):
                    continue
                t = out.setdefault(r["call"], [0, 0.0, 0])
                t[0] += calls
                t[1] += total
                t[2] += slow
    return out


# state.json's per-GPU states (daemon/loop/gpu_time.hpp): the busy ones, then the idle causes.
BUSY = ["starter", "candidate", "judged_again", "proposing"]
IDLE = ["start", "loop_thread", "no_open_kernel", "llm_limit", "ending"]


def gpu_time(state):
    """{state: seconds summed over the leg's GPUs}, and the GPU-seconds in all."""
    out = {}
    for g in state.get("gpus", []):
        for k, v in (g.get("seconds") or {}).items():
            out[k] = out.get(k, 0.0) + float(v)
    return out, sum(out.values())


def mean_seconds(rows):
    """The mean seconds of a candidate's row (starters and the best judged again left out)."""
    xs = [float(r["seconds"] or 0) for r in rows
          if not r["description"].startswith(("baseline", "the best judged again")) and r["correctness"] != "NO_PROPOSAL"]
    return statistics.mean(xs) if xs else None


def rebench(folder):
    """{(leg, tag): median µs} from rebench.jsonl, whose lines name the file runs/scaling-N/kernels/TAG.cu."""
    out, path = {}, os.path.join(folder, "rebench.jsonl")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            try:
                v = json.loads(line)
            except ValueError:
                continue
            m = re.search(r"scaling-(\d+)/kernels/([^/]+)\.cu$", v.get("file", ""))
            timing = v.get("timing") or {}
            if m and "median_us" in timing:
                out[(int(m.group(1)), m.group(2))] = timing["median_us"]
    return out


def fmt(x, spec="{:.0f}"):
    return "-" if x is None else spec.format(x)


def markdown(legs, again):
    one = next((l for l in legs if l["gpus"] == 1), None)
    lines = ["| GPUs | experiments | wall s | per hour, whole run | per hour, first to last row | per hour, all GPUs busy (s) "
             "| × one GPU (busy) | stale verdicts (judged again) | too noisy, judged again | kept | reverts per best "
             "| reverts after the last best (mean, max) | decision ms (median, max) | ended |", "|" + "---|" * 14]
    for l in legs:
        ratio = l["per_hour_busy"] / one["per_hour_busy"] if one and one["per_hour_busy"] and l["per_hour_busy"] else None
        lines.append(f"| {l['gpus']} | {l['experiments']} | {fmt(l['wall_s'], '{:.1f}')} | {fmt(l['per_hour_whole'])} "
                     f"| {fmt(l['per_hour_rows'])} | {fmt(l['per_hour_busy'])} ({l['busy_s']:.1f}) | {fmt(ratio, '{:.2f}×')} "
                     f"| {fmt(l['stale'])} ({fmt(l['judged_again'])}) | {fmt(l['noisy'])} | {l['kept']} "
                     f"| {l['reverts_per_best']:.2f} "
                     f"| {l['tail_reverts_mean']:.2f}, {l['tail_reverts_max']} "
                     f"| {fmt(l['decision_median_ms'], '{:.1f}')}, {fmt(l['decision_max_ms'], '{:.1f}')} | {l['status']} |")
    lines += ["", "Where the GPUs' time went, in GPU-seconds summed over the leg's GPUs (% of all); a candidate's "
              "mean seconds from dispatch to its row:", "",
              "| GPUs | GPU-s | " + " | ".join(BUSY + IDLE) + " | candidate s |", "|---|---|" + "---|" * (len(BUSY) + len(IDLE) + 1)]
    for l in legs:
        by, total = l["gpu_time"]
        cells = [f"{by.get(k, 0):.1f} ({by.get(k, 0) / total * 100:.1f}%)" if total else "-" for k in BUSY + IDLE]
        lines.append(f"| {l['gpus']} | {total:.1f} | " + " | ".join(cells) + f" | {fmt(l['candidate_s'], '{:.2f}')} |")
    tags = sorted({t for l in legs for t in l["bests"]})
    lines += ["", "| kernel | " + " | ".join(f"{l['gpus']} GPU(s): run / again on GPU 0" for l in legs) +
              " | spread of the benched again |", "|---|" + "---|" * (len(legs) + 1)]
    for tag in tags:
        cells, benched = [], []
        for l in legs:
            b = again.get((l["gpus"], tag))
            if b is not None:
                benched.append(b)
            cells.append(f"{fmt(l['bests'].get(tag), '{:.2f}')} / {fmt(b, '{:.2f}')}")
        spread = (max(benched) - min(benched)) / min(benched) if len(benched) > 1 else None
        lines.append(f"| {tag} | " + " | ".join(cells) + f" | {fmt(spread and spread * 100, '{:.1f}%')} |")
    lines += bests_against_one(legs, tags, again)
    lines += stage_table(legs)
    lines += driver_table(legs)
    return "\n".join(lines) + "\n"


def bests_against_one(legs, tags, again, within=0.005):
    """Per leg of several GPUs, its bests benched again against one GPU's: how many are within
    `within`, and those outside it, slower (the goal's failures) and faster."""
    lines = []
    for l in legs:
        if l["gpus"] == 1:
            continue
        pairs = [(t, again[(l["gpus"], t)] / again[(1, t)] - 1) for t in tags if (1, t) in again and (l["gpus"], t) in again]
        if not pairs:
            continue
        slower = [f"{t} {d * 100:+.2f}%" for t, d in pairs if d > within]
        faster = [f"{t} {d * 100:+.2f}%" for t, d in pairs if d < -within]
        lines.append(f"- {l['gpus']} GPUs: {len(pairs) - len(slower) - len(faster)} of {len(pairs)} bests within "
                     f"{within * 100:.1f}% of one GPU's; slower: {', '.join(slower) or 'none'}; faster: {', '.join(faster) or 'none'}")
    return ["", "Bests benched again on GPU 0, against one GPU's:", ""] + lines if lines else []


def stage_table(legs):
    """A candidate's stages, median seconds per leg, and each against the one-GPU leg's."""
    names = []
    for l in legs:
        for k in l.get("stages") or {}:
            if k not in names:
                names.append(k)
    if not names:
        return []
    one = next((l for l in legs if l["gpus"] == 1), None)
    lines = ["", "A candidate's stages in its verdict, median seconds (× the one-GPU leg's):", "",
             "| stage | " + " | ".join(f"{l['gpus']} GPU(s)" for l in legs) + " |", "|---|" + "---|" * len(legs)]
    for k in names:
        cells = []
        for l in legs:
            x = (l.get("stages") or {}).get(k)
            base = (one.get("stages") or {}).get(k) if one else None
            ratio = f" ({x / base:.2f}×)" if x is not None and base and l is not one else ""
            cells.append(f"{fmt(x, '{:.3f}')}{ratio}")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return lines


def driver_table(legs, top=24):
    """The driver calls (and CUPTI's) that took longest on any leg, then every phase of a stage
    ("timing: ...", "benchmark: ...", however short: how often a best was compiled says as much as
    how long), per leg: calls, seconds, calls over 1 ms."""
    calls = sorted({c for l in legs for c in l["driver"]}, key=lambda c: -max(l["driver"].get(c, [0, 0.0, 0])[1] for l in legs))
    if not calls:
        return []
    lines = ["", "Time in the CUDA driver's calls, summed over the leg's workers (calls, seconds, calls over 1 ms); "
             "CUPTI's calls and the timing stage's phases (\"timing: ...\") are timed beside them:", "",
             "| call | " + " | ".join(f"{l['gpus']} GPU(s)" for l in legs) + " |", "|---|" + "---|" * len(legs)]
    for c in calls[:top] + [c for c in calls[top:] if ": " in c]:
        cells = [(lambda t: f"{t[0]}, {t[1] / 1000:.2f} s, {t[2]}" if t else "-")(l["driver"].get(c)) for l in legs]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return lines


def main(folder):
    walls = {}
    wall_path = os.path.join(folder, "wall.txt")
    if os.path.exists(wall_path):
        for line in open(wall_path):
            parts = line.split()
            if len(parts) == 2:
                walls[int(parts[0])] = float(parts[1])
    ns = sorted(int(m.group(1)) for m in (re.match(r"leg-(\d+)-results\.tsv$", f) for f in os.listdir(folder)) if m)
    legs = [leg_numbers(folder, n, walls.get(n)) for n in ns]
    sys.stdout.write(markdown(legs, rebench(folder)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
