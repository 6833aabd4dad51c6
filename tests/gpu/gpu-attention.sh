#!/usr/bin/env bash
# flash_attention (contract version 2) against PyTorch's SDPA, in one call on the GPU machine, from
# the repository root, with .gpu-bundle/ holding the binaries (tests/gpu/gpu-round.sh bundle):
#   tests/gpu/gpu-attention.sh
# Every flash_attention file (the starter and each variant) through `autokernel bench` (the five
# stages, then CUPTI's median kernel time) at:
#   bench    B4 Hq32 Hkv32 S4096 D128 causal, contiguous      fp16 and bf16
#   decoder  B2 Hq16 Hkv4  S2048 D128 causal, the projections' views (a Qwen3-like layer)  fp16 and bf16
#   long     B2 Hq16 Hkv4  S8192 D128 causal, the projections' views   fp16
# then F.scaled_dot_product_attention at the same shapes, layouts and dtypes (is_causal=True,
# enable_gqa=True where Hq != Hkv), its kernel time from torch.profiler's CUPTI records with the L2
# flushed before each call, as tests/gpu/pytorch-baselines.py measures. Writes to $OUT/attention/:
#   bench.jsonl (one verdict a line), sdpa.jsonl, table.md (µs, TFLOPS, our time / SDPA's time),
#   bench.log, gpu.txt. Stops starting new benches past ATTENTION_BUDGET_S seconds (default 200)
#   so that the whole call stays under four minutes; what was skipped is said in table.md.
set -uo pipefail
cd "$(dirname "$0")/../.."

out=${OUT:-$PWD/gpu-round-out}/attention
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64
export AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache
ak=$PWD/.gpu-bundle/autokernel
budget=${ATTENTION_BUDGET_S:-200}
started=$(date +%s)
files="starter mma_registers wgmma_registers tma_pingpong"
# name shape dtype
runs=(
  "bench 4x32x32x4096x128x1x1 fp16"
  "bench 4x32x32x4096x128x1x1 bf16"
  "decoder 2x16x4x2048x128x1x2 fp16"
  "decoder 2x16x4x2048x128x1x2 bf16"
  "long 2x16x4x8192x128x1x2 fp16"
)

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
: > "$out/bench.jsonl"
: > "$out/skipped.txt"

echo "== SDPA"
timeout 90 python3 - "${runs[@]}" > "$out/sdpa.jsonl" 2> "$out/sdpa.err" <<'PY'
import importlib.util, json, sys
import torch
import torch.nn.functional as F

spec = importlib.util.spec_from_file_location("baselines", "tests/gpu/pytorch-baselines.py")
baselines = importlib.util.module_from_spec(spec)
spec.loader.exec_module(baselines)
torch.manual_seed(0)
dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}

def operand(B, H, S, D, layout, kv, dt):
    # layout 1: contiguous [B, H, S, D]; 2: a projection's [B, S, H, D] seen transposed;
    # 3: q (and o) as 2, k and v contiguous as a KV cache holds them (kernels_cuda/flash_attention/attention_layouts.hpp).
    if layout == 2 or (layout == 3 and not kv):
        return torch.randn(B, S, H, D, device="cuda", dtype=dt).transpose(1, 2)
    return torch.randn(B, H, S, D, device="cuda", dtype=dt)

for run in sys.argv[1:]:
    name, shape, dtype = run.split()
    B, Hq, Hkv, S, D, mask, layout = (int(x) for x in shape.split("x"))
    causal = mask == 1
    dt = dtypes[dtype]
    q = operand(B, Hq, S, D, layout, False, dt)
    k, v = operand(B, Hkv, S, D, layout, True, dt), operand(B, Hkv, S, D, layout, True, dt)
    gqa = Hq != Hkv
    fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), enable_gqa=gqa)
    us = baselines.kernel_us(fn)
    flops = 4.0 * B * Hq * S * S * D / (2 if causal else 1)
    print(json.dumps({"run": name, "shape": shape, "dtype": dtype, "what": "SDPA" + (" enable_gqa" if gqa else ""),
                      "kernel_us": round(us, 2), "tflops": round(flops / us / 1e6, 1)}), flush=True)
    del q, k, v
    torch.cuda.empty_cache()
PY
echo "sdpa exit $?"

for run in "${runs[@]}"; do
  read -r name shape dtype <<< "$run"
  if (( $(date +%s) - started > budget )); then
    echo "$name $shape $dtype: not benched, past the ${budget} s budget" | tee -a "$out/skipped.txt"
    continue
  fi
  echo "== $name $shape $dtype"
  left=$(( budget + 40 - ($(date +%s) - started) ))
  # One worker for the four files: the reference's baseline time is measured once per shape.
  # shellcheck disable=SC2086
  timeout "$left" "$ak" bench $files --kernel flash_attention --shape "$shape" --dtype "$dtype" --repetitions 30 --json \
    2>> "$out/bench.log" | python3 -c "
import json, sys
for line in sys.stdin:
    if not line.startswith('{'):
        continue
    v = json.loads(line)
    v['run'] = '$name'
    print(json.dumps(v))" >> "$out/bench.jsonl"
  echo "bench exit ${PIPESTATUS[0]}"
done

python3 - "$out" <<'PY' > "$out/table.md"
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
sdpa = {}
for line in (out / "sdpa.jsonl").read_text().splitlines():
    s = json.loads(line)
    sdpa[(s["shape"], s["dtype"])] = s
print("| run | shape (B x Hq x Hkv x S x D x mask x layout) | dtype | file | result | µs | TFLOPS | SDPA µs | SDPA TFLOPS | our µs / SDPA µs |")
print("|---|---|---|---|---|---|---|---|---|---|")
for line in (out / "bench.jsonl").read_text().splitlines():
    v = json.loads(line)
    t = v.get("timing") or {}
    us = t.get("median_us")
    s = sdpa.get((v.get("shape"), v.get("dtype")), {})
    ratio = f"{us / s['kernel_us']:.3f}" if us and s.get("kernel_us") else "-"
    result = v.get("correctness", "?")
    if result != "PASS":
        result += ": " + v.get("message", "")[:120].replace("|", "/")
    print(f"| {v.get('run')} | {v.get('shape')} | {v.get('dtype')} | {v.get('file')} | {result} | "
          f"{us if us else '-'} | {round(v.get('throughput', 0), 1) if us else '-'} | {s.get('kernel_us', '-')} | "
          f"{s.get('tflops', '-')} | {ratio} |")
skipped = (out / "skipped.txt").read_text().strip()
if skipped:
    print("\nNot benched (time budget):\n\n" + "\n".join("- " + l for l in skipped.splitlines()))
PY
cat "$out/table.md"
echo "total $(( $(date +%s) - started )) s"
