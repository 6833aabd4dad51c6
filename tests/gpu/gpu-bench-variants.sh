#!/usr/bin/env bash
# The measured time in each kernel file's header: every built-in type's starter and each of its
# variants benched at the type's benchmark shape in fp16, one worker per type, on the GPU machine.
#   tests/gpu/gpu-round.sh bundle                  on the build machine: .gpu-bundle/
#   tests/gpu/gpu-bench-variants.sh [OUT_DIR]      on the GPU machine, from the repository root
#                                                (OUT_DIR: default $OUT, else ./gpu-bench-out)
#   tests/gpu/write-measured-times.py OUT_DIR/measured.tsv    back here: each file's `measured:` line
# Writes OUT_DIR/measured.tsv (file, type, median_us, spread, device, date: one row per file; a
# file that did not pass has its verdict in median_us and no spread), OUT_DIR/<type>.jsonl (the
# verdicts) and OUT_DIR/<type>.log (bench's own output).
set -uo pipefail
cd "$(dirname "$0")/../.."

out=${1:-${OUT:-$PWD/gpu-bench-out}}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64
export AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache
ak=${AK:-$PWD/.gpu-bundle/autokernel}
[ -x "$ak" ] || { echo "gpu-bench-variants.sh: no $ak: run tests/gpu/gpu-round.sh bundle on the build machine first" >&2; exit 2; }

device=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)
[ -n "$device" ] || { echo "gpu-bench-variants.sh: nvidia-smi names no GPU 0: run this on the GPU machine" >&2; exit 2; }
date=$(date -u +%Y-%m-%d)
echo "device: $device"
echo "date: $date"

tsv=$out/measured.tsv
printf 'file\ttype\tmedian_us\tspread\tdevice\tdate\n' > "$tsv"
status=0
for dir in kernels_cuda/*/; do
  dir=${dir%/}
  type=$(basename "$dir")
  [ -f "$dir/$type.cu" ] || continue   # a folder without a starter holds no type
  files=("$dir/$type.cu")
  for v in "$dir"/variants/*.cu; do [ -f "$v" ] && files+=("$v"); done
  echo "== $type: ${#files[@]} files"
  "$ak" bench "${files[@]}" --kernel "$type" --dtype fp16 --json > "$out/$type.jsonl" 2> "$out/$type.log" || status=1
  python3 - "$out/$type.jsonl" "$type" "$device" "$date" "${files[@]}" >> "$tsv" <<'PY' || status=1
import json, sys
path, kind, device, date, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
verdicts = {}
for line in open(path):
    if line.strip():
        v = json.loads(line)
        verdicts[v["file"]] = v
for f in files:
    v = verdicts.get(f)
    timing = (v or {}).get("timing") or {}
    if v and v.get("correctness") == "PASS" and timing.get("median_us", 0) > 0:
        median, spread = f"{timing['median_us']:.2f}", f"{timing['spread']:.3f}"
    else:
        median, spread = (v or {}).get("correctness") or "NO_VERDICT", ""
    print("\t".join([f, kind, median, spread, (v or {}).get("gpu") or device, date]))
    sys.stderr.write(f"{f}: {median} us\n")
PY
done
echo "wrote $tsv"
exit $status
