#!/usr/bin/env bash
# matmul (y = x W^T + bias, contract version 2) against PyTorch's F.linear, in one GPU call:
# our files through `autokernel bench` (the five stages, then CUPTI kernel time) in fp16, bf16 and
# fp32 (CUDA-core FMAs in the reference's order), and PyTorch's cuBLAS GEMM at the same shapes and dtypes, fp32 with TF32 off
# (KernelBench's setting), timed as kernel time from torch.profiler's CUPTI records with L2
# flushed before each call. Writes gemm.md (the table), bench-N.json (our verdicts), torch.jsonl
# and gemm.log to $OUT. Meant to end within 4 minutes: each bench is cut at 45 s.
# On the GPU machine, from the repository root, after tests/gpu/gpu-round.sh bundle.
#   AK_GEMM_TESTS=1   also run the [gpu][matmul] tests first (several more minutes)
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-round-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64
export AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache
ak=$PWD/.gpu-bundle/autokernel
log=$out/gemm.log
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$log"; }

nvidia-smi -L >> "$log" 2>&1
if [ "${AK_GEMM_TESTS:-0}" = 1 ]; then
  say "[gpu][matmul] tests"
  .gpu-bundle/autokernel_tests "[gpu][matmul]" > "$out/gemm-tests.log" 2>&1
  say "tests exit $?"
fi

# file dtype shape (M x N x K x has_bias): the fast file of each dtype at 4096^3, and a
# Qwen3-like gate/up projection (4096 tokens, 2048 -> 6144) with a bias. The five stages of each
# run in all three dtypes whatever the timed one.
# The ping-pong variant runs as shipped and with stream-K over its last wave (AK_STREAM_K 1, a
# copy of the file in $OUT).
sed 's/^#define AK_STREAM_K 0/#define AK_STREAM_K 1/' kernels_cuda/matmul/variants/tma_pingpong.cu > "$out/tma_pingpong_stream_k.cu"
cases="tma_warp_specialized fp16 4096x4096x4096x0
tma_warp_specialized bf16 4096x4096x4096x0
tma_pingpong fp16 4096x4096x4096x0
tma_pingpong bf16 4096x4096x4096x0
$out/tma_pingpong_stream_k.cu fp16 4096x4096x4096x0
starter fp32 4096x4096x4096x0
mma_pipeline fp32 4096x4096x4096x0
tma_warp_specialized bf16 4096x6144x2048x1
tma_pingpong bf16 4096x6144x2048x1"
echo "$cases" > "$out/cases.txt"
i=0
while read -r file dtype shape; do
  say "bench $file $dtype $shape"
  timeout 45 "$ak" bench "$file" --kernel matmul --dtype "$dtype" --shape "$shape" --repetitions 30 --json \
    > "$out/bench-$i.json" 2>> "$log" || say "bench $file $dtype $shape: exit $?"
  i=$((i + 1))
done <<< "$cases"
cat "$out"/bench-*.json > "$out/bench.jsonl" 2>/dev/null

say "PyTorch F.linear"
python3 - "$out/torch.jsonl" <<'EOF' 2>> "$log"
import json, sys, torch
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity

torch.backends.cuda.matmul.allow_tf32 = False   # fp32 on the CUDA cores, as KernelBench runs it
torch.backends.cudnn.allow_tf32 = False
dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
cases = [("fp16", 4096, 4096, 4096, 0), ("bf16", 4096, 4096, 4096, 0), ("fp32", 4096, 4096, 4096, 0),
         ("bf16", 4096, 6144, 2048, 1)]
flush = torch.empty(256 << 20 >> 2, dtype=torch.int32, device="cuda")
with open(sys.argv[1], "w") as f:
    for name, m, n, k, has_bias in cases:
        t = dtypes[name]
        x = torch.randn(m, k, device="cuda", dtype=t)
        w = torch.randn(n, k, device="cuda", dtype=t) / k ** 0.5
        b = torch.randn(n, device="cuda", dtype=t) if has_bias else None
        for _ in range(5):
            F.linear(x, w, b)
        torch.cuda.synchronize()
        calls = 30
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                flush.zero_()
                F.linear(x, w, b)
            torch.cuda.synchronize()
        # Per call, the summed CUPTI durations of its kernels (the flush opens each call), as
        # tests/gpu/pytorch-baselines.py measures; the median over the calls.
        kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                         key=lambda e: e.time_range.start)
        flush_name = kernels[0].name
        per_call, current, names = [], None, set()
        for e in kernels:
            if e.name == flush_name:
                if current is not None:
                    per_call.append(current)
                current = 0.0
            elif current is not None:
                current += e.time_range.elapsed_us()
                names.add(e.name)
        if current is not None:
            per_call.append(current)
        per_call.sort()
        us = per_call[len(per_call) // 2]
        names = sorted(names)
        f.write(json.dumps({"dtype": name, "shape": f"{m}x{n}x{k}x{has_bias}", "kernel_us": us,
                            "tflops": 2.0 * m * n * k / us / 1e6, "kernels": names}) + "\n")
EOF
say "PyTorch exit $?"

python3 - "$out" <<'EOF' | tee "$out/gemm.md"
import json, sys
out = sys.argv[1]
cases = [l.split() for l in open(f"{out}/cases.txt") if l.strip()]
torch = {}
try:
    torch = {(r["dtype"], r["shape"]): r for r in (json.loads(l) for l in open(f"{out}/torch.jsonl") if l.strip())}
except OSError:
    pass
print("| dtype | M x N x K x bias | our file | verdict | ours (us) | ours TFLOPS | PyTorch (us) | PyTorch TFLOPS | ours / PyTorch | cuBLAS in our harness (us) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for i, (file, dtype, shape) in enumerate(cases):
    try:
        v = json.loads(open(f"{out}/bench-{i}.json").read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        v = {"correctness": "NO VERDICT (see gemm.log)"}
    t = torch.get((dtype, shape), {})
    us = (v.get("timing") or {}).get("median_us", 0)
    ratio = f"{us / t['kernel_us']:.3f}" if us and t.get("kernel_us") else "-"
    print(f"| {dtype} | {shape} | {file} | {v.get('correctness', '?')} "
          f"{v.get('failed_stage', '')} {v.get('message', '')[:80] if v.get('correctness') != 'PASS' else ''} | "
          f"{us:.1f} | {v.get('throughput', 0):.1f} | {t.get('kernel_us', 0):.1f} | {t.get('tflops', 0):.1f} | {ratio} | "
          f"{v.get('cublas_us', 0):.1f} |")
EOF
say "done"
