#!/usr/bin/env python3
"""The builtin tuner with and without its order by the counters, from the folder
tests/gpu/tuner-comparison.sh fills: per type, each run's best µs and the experiments it took to
reach it, their ratio, and whether the "on" best is within 1% of the "off" one (today's order);
then the totals: experiments until the last kept best in each run, and whether the goal holds (every
best within 1% in at least 20% fewer experiments). Prints markdown (docs/results.md takes it as it is).

    python3 tests/gpu/summarize-tuner-comparison.py DIR

DIR holds on/ and off/, each with the run's results.tsv and state.json (counters.tsv when it was
written), and rebench.jsonl when the bests were benched again: `bench ON --beside OFF --json` lines,
whose paired ratio (on / off in the same launches, one GPU) then decides the 1%.

Experiments are rows of results.tsv, in experiment order, every row of the kernel counted (its
baseline row, failures, the best judged again): what the run spent. Experiments to the best: the
rows of the kernel up to its last kept row (a demoted best's row included: it is when the best that
stands was settled)."""
import csv
import json
import os
import re
import sys

WITHIN = 0.01          # the "on" best may be at most this much slower than the "off" one
FEWER = 0.20           # and reach it in at least this share fewer experiments, over all types
CHOSEN = "(first because the best is"   # how the tuner's description names a move the counters chose


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return sorted(rows, key=lambda r: int(r["experiment"]))


def read_run(folder):
    """{tag: numbers} of one run: rows, experiments to its best, best µs, moves the counters chose,
    and why the kernel stopped ("" when it had not: the budget ended the run first)."""
    rows = read_rows(os.path.join(folder, "results.tsv"))
    state_path = os.path.join(folder, "state.json")
    state = {}
    if os.path.exists(state_path):
        with open(state_path) as f:
            state = json.load(f)
    converged = {k.get("tag"): k.get("converged", "") for k in state.get("kernels", [])}
    out = {}
    for r in rows:
        k = out.setdefault(r["tag"], {"type": r["kernel_type"], "experiments": 0, "to_best": None, "best_us": None,
                                      "chosen": 0, "converged": converged.get(r["tag"], "")})
        k["experiments"] += 1
        if r["kept"] == "yes":
            k["to_best"], k["best_us"] = k["experiments"], float(r["latency_us"])
        if CHOSEN in r.get("description", ""):
            k["chosen"] += 1
    return out, state.get("status", "")


def counters_read(folder):
    """(experiments with readings, experiments in counters.tsv), or None without the file."""
    path = os.path.join(folder, "counters.tsv")
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return sum(1 for r in rows if not r.get("unavailable")), len(rows)


def paired(folder):
    """{tag: (ratio on / off, noise)} from rebench.jsonl, whose lines name the file .../on/kernels/TAG.cu."""
    out, path = {}, os.path.join(folder, "rebench.jsonl")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        lines = f.readlines()
    for line in lines:
        try:
            v = json.loads(line)
        except ValueError:
            continue
        m = re.search(r"(?:^|/)on/kernels/([^/]+)\.cu$", v.get("file", ""))
        p = v.get("paired") or {}
        if m and v.get("correctness") == "PASS" and p.get("pairs", 0) > 0 and p.get("ratio", 0) > 0 \
                and not p.get("best_failure"):
            out[m.group(1)] = (p["ratio"], p.get("noise", 0.0))
    return out


def compare(on, off, again):
    """One line per tag of either run, and the totals over the tags both runs brought to a best."""
    lines, to_on, to_off, all_within, both = [], 0, 0, True, 0
    for tag in sorted(set(on) | set(off)):
        a, b = on.get(tag), off.get(tag)
        line = {"tag": tag, "on": a, "off": b, "ratio": None, "slower": None, "within": None, "by": None}
        if a and b and a["to_best"] and b["to_best"]:
            both += 1
            line["ratio"] = a["to_best"] / b["to_best"]
            to_on, to_off = to_on + a["to_best"], to_off + b["to_best"]
            if tag in again:
                line["slower"], line["by"] = again[tag][0] - 1, "paired"
            else:
                line["slower"], line["by"] = a["best_us"] / b["best_us"] - 1, "runs"
            line["within"] = line["slower"] <= WITHIN
        all_within = all_within and line["within"] is True
        lines.append(line)
    totals = {"to_best_on": to_on, "to_best_off": to_off, "types": both,
              "ratio": to_on / to_off if to_off else None, "all_within": all_within and both > 0,
              "experiments_on": sum(k["experiments"] for k in on.values()),
              "experiments_off": sum(k["experiments"] for k in off.values())}
    # A kernel its run's budget cut short may have had its best still ahead: nothing is decided.
    totals["unfinished"] = [l["tag"] for l in lines if any(k and not k["converged"] for k in (l["on"], l["off"]))]
    totals["goal"] = bool(totals["all_within"] and totals["ratio"] is not None and totals["ratio"] <= 1 - FEWER
                          and not totals["unfinished"])
    return lines, totals


def fmt(x, spec="{:.2f}"):
    return "-" if x is None else spec.format(x)


def stop_word(k):
    return "-" if k is None else (k["converged"] or "not converged")


def markdown(lines, totals, status, readings):
    out = ["| type | on: best µs | on: experiments to best (of all) | off: best µs | off: experiments to best (of all) "
           "| ratio on / off | on slower by (how) | within 1% | moves the counters chose (on) | stopped (on / off) |",
           "|" + "---|" * 10]
    for l in lines:
        a, b = l["on"], l["off"]
        cell = lambda k: "-" if k is None else f"{fmt(k['to_best'], '{}')} ({k['experiments']})"
        slower = "-" if l["slower"] is None else f"{l['slower'] * 100:+.2f}% ({l['by']})"
        within = "-" if l["within"] is None else ("yes" if l["within"] else "**no**")
        out.append(f"| {l['tag']} | {fmt(a and a['best_us'])} | {cell(a)} | {fmt(b and b['best_us'])} | {cell(b)} "
                   f"| {fmt(l['ratio'])} | {slower} | {within} | {a['chosen'] if a else '-'} "
                   f"| {stop_word(a)} / {stop_word(b)} |")
    t = totals
    saving = None if t["ratio"] is None else (1 - t["ratio"]) * 100
    cut_short = f" ({len(t['unfinished'])} kernels did not converge)" if t["unfinished"] else ""
    out += ["", f"Experiments until the last kept best, over the {t['types']} types both runs brought to a best: "
                f"on {t['to_best_on']}, off {t['to_best_off']} (ratio {fmt(t['ratio'])}, "
                f"{fmt(saving, '{:.1f}')}% fewer); all experiments: on {t['experiments_on']}, off {t['experiments_off']}.",
            f"Every best within 1%: {'yes' if t['all_within'] else 'no'}. "
            f"Goal (every best within 1% in at least {FEWER * 100:.0f}% fewer experiments): "
            f"{'met' if t['goal'] else 'not met'}{cut_short}.",
            f"Runs ended: on {status['on'] or '-'}, off {status['off'] or '-'}."]
    r = readings
    if r is not None:
        out.append(f"Counters in the on run: {r[0]} of {r[1]} judged experiments had readings.")
        if r[0] == 0:
            out.append("**The on run had no readings: its order was the playbook's, and the comparison measures noise.**")
    if t["unfinished"]:
        out.append("Not converged when its run ended (the comparison of these is incomplete): " +
                   ", ".join(t["unfinished"]) + ".")
    return "\n".join(out) + "\n"


def main(folder):
    runs, status = {}, {}
    for order in ("on", "off"):
        path = os.path.join(folder, order)
        if not os.path.exists(os.path.join(path, "results.tsv")):
            sys.exit(f"summarize-tuner-comparison: no {order}/results.tsv in {folder}: the {order} run did not record")
        runs[order], status[order] = read_run(path)
    lines, totals = compare(runs["on"], runs["off"], paired(folder))
    sys.stdout.write(markdown(lines, totals, status, counters_read(os.path.join(folder, "on"))))
    return 0 if totals["goal"] else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
