#!/usr/bin/env python3
"""Prints the numbers of a GPU round (tests/gpu/gpu-round.sh run) for docs/harness-benchmarks.md.

usage: tests/gpu/summarize-gpu-round.py OUT_DIR
"""
import json
import statistics
import sys
from pathlib import Path


def main(out: Path) -> None:
    rows = [json.loads(line) for line in (out / "bench.jsonl").read_text().splitlines() if line.strip()]
    print("| kernel | file | dtype | verdict | median µs | p10-p90 µs | events µs | GB/s | pct_peak | reference µs | evaluation s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        t = r.get("timing", {})
        print(f"| {r['kernel_type']} | {Path(r['file']).name} | {r['dtype']} | {r['correctness']} | "
              f"{t.get('median_us', 0):.2f} | {t.get('p10_us', 0):.2f}-{t.get('p90_us', 0):.2f} | "
              f"{t.get('event_median_us', 0):.2f} | {r['throughput']:.0f} | {r['pct_peak']:.3f} | "
              f"{r['reference_us']:.1f} | {r['total_seconds']:.2f} |")
    for kernel in ("rmsnorm", "softmax"):
        meds = [r["timing"]["median_us"] for r in rows
                if r["kernel_type"] == kernel and r["file"] == "starter" and r["dtype"] == "fp16" and "timing" in r]
        if meds:
            print(f"\n{kernel} starter benched {len(meds)} times: medians {min(meds):.2f}-{max(meds):.2f} µs, "
                  f"spread {(max(meds) - min(meds)) / statistics.median(meds) * 100:.2f}%")
    candidates = [r for r in rows if r["file"].startswith("/tmp/variants/")]
    if candidates:
        print(f"\n{len(candidates)} candidates: full evaluation median "
              f"{statistics.median(r['total_seconds'] for r in candidates):.2f} s, max "
              f"{max(r['total_seconds'] for r in candidates):.2f} s")
        names = [s["name"] for s in candidates[0]["stages"]]
        for n in names:
            secs = [s["seconds"] for r in candidates for s in r["stages"] if s["name"] == n]
            print(f"  {n}: median {statistics.median(secs):.2f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "gpu-round-out"))
