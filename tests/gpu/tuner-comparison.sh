#!/usr/bin/env bash
# What ordering the builtin tuner's moves by the hardware counters saves: config/tuner-comparison.toml
# (the ten built-in types, fp16, the builtin tuner) run to convergence twice, with [tuner]
# order_by_counters = true ("on") and = false ("off", the playbook order), each with a fresh run
# folder and peak cache of its own. With two GPUs (the first two of CUDA_VISIBLE_DEVICES, else of
# nvidia-smi -L) both runs go at once, one per GPU; with one, one after the other, each with half
# the time. Then each type's two bests are benched on one GPU, the "on" best paired with the "off"
# best launch for launch (chips of one model differ by a few percent, so the runs' own times are
# not compared across GPUs), and tests/gpu/summarize-tuner-comparison.py prints the comparison.
# On the GPU machine, from the repository root, after tests/gpu/gpu-round.sh bundle:
#   tests/gpu/tuner-comparison.sh
#   AK_TUNER_BUDGET_S=500    seconds for the whole script (default 500): the runs get what the
#                            rebench and a margin leave, as their max_hours
#   AK_TUNER_ORDERS="on off" the runs to make (one of them alone: a call each, the folders
#                            merged afterwards and summarized where they land)
#   AK_TUNER_REBENCH=0       leave out the paired rebench (its time goes to the runs)
# Writes $OUT/tuner-comparison/{on,off}/ (results.tsv, counters.tsv, state.json, autokernel.log,
# kernels/, run.log), rebench.jsonl, progress.txt, summary.md, and tuner-comparison.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-round-out}
w=$out/tuner-comparison
mkdir -p "$w"
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64
ak=${AK:-$PWD/.gpu-bundle/autokernel}
[ -x "$ak" ] || { echo "tuner-comparison.sh: no $ak: run tests/gpu/gpu-round.sh bundle on the build machine first" >&2; exit 2; }
budget=${AK_TUNER_BUDGET_S:-500}
orders=${AK_TUNER_ORDERS:-on off}
rebench=${AK_TUNER_REBENCH:-1}
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$w/progress.txt"; }
for o in $orders; do
  case $o in on|off) ;; *) echo "tuner-comparison.sh: AK_TUNER_ORDERS holds '$o': expected on and/or off" >&2; exit 2 ;; esac
done
[[ $budget =~ ^[0-9]+$ ]] || { echo "tuner-comparison.sh: AK_TUNER_BUDGET_S=$budget: expected whole seconds" >&2; exit 2; }

# The GPUs, as CUDA_VISIBLE_DEVICES names them (indices or UUIDs), else nvidia-smi's indices.
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=, read -r -a gpus <<< "$CUDA_VISIBLE_DEVICES"
else
  mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null)
fi
[ "${#gpus[@]}" -ge 1 ] || { echo "tuner-comparison.sh: no GPU (CUDA_VISIBLE_DEVICES empty, nvidia-smi lists none)" >&2; exit 2; }
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader > "$w/gpus.txt" 2>&1
read -r -a runs <<< "$orders"
parallel=0
[ "${#gpus[@]}" -ge 2 ] && [ "${#runs[@]}" -ge 2 ] && parallel=1

# The seconds each run may take: the budget less the rebench (about 10 s a type) and a margin for
# starting, copying and summarizing; split in two when the runs go one after the other.
reserve=30
[ "$rebench" = 1 ] && [ "${#runs[@]}" -ge 2 ] && reserve=$(( reserve + 100 ))
run_s=$(( budget - reserve ))
[ "$parallel" = 1 ] || run_s=$(( run_s / ${#runs[@]} ))
[ "$run_s" -ge 60 ] || { echo "tuner-comparison.sh: AK_TUNER_BUDGET_S=$budget leaves $run_s s a run: give more" >&2; exit 2; }
say "GPUs: ${gpus[*]}; runs: ${runs[*]}; $( [ "$parallel" = 1 ] && echo "in parallel" || echo "one after the other" ), $run_s s each"

# run_config ORDER: config/tuner-comparison.toml as run tuner-comparison-ORDER with its order and budget.
run_config() {
  local order=$1 flag=true cfg=config/tuner-comparison-$1.generated.toml
  [ "$order" = off ] && flag=false
  sed -e "s/^name = \"tuner-comparison\"/name = \"tuner-comparison-$order\"/" \
      -e "s/^order_by_counters = true/order_by_counters = $flag/" \
      -e "s/^max_hours = .*/max_hours = $(python3 -c "print(round($run_s / 3600, 6))")/" \
      config/tuner-comparison.toml > "$cfg"
  grep -q "^order_by_counters = $flag\$" "$cfg" && grep -q "^name = \"tuner-comparison-$order\"" "$cfg" ||
    { echo "tuner-comparison.sh: config/tuner-comparison.toml no longer has the lines this script rewrites" >&2; return 2; }
  echo "$cfg"
}

# one_run ORDER GPU: the run to convergence (or its budget) on GPU alone, its folder copied to $w/ORDER.
one_run() {
  local order=$1 gpu=$2 cfg start
  cfg=$(run_config "$order") || return 2
  rm -rf "runs/tuner-comparison-$order" "$w/$order"
  mkdir -p "$w/$order"
  say "$order: run on GPU $gpu"
  start=$(date +%s)
  # The daemon stops itself at max_hours; the timeout only guards against a run that would not
  # (SIGTERM: it finishes the experiment in flight and writes its state).
  CUDA_VISIBLE_DEVICES=$gpu AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache-tuner-$order \
    timeout -s TERM -k 30 $(( run_s + 45 )) "$ak" run --config "$cfg" > "$w/$order/run.log" 2>&1
  echo "exit $? after $(( $(date +%s) - start )) s" >> "$w/$order/run.log"
  local dir=runs/tuner-comparison-$order
  for f in results.tsv counters.tsv state.json autokernel.log; do
    [ -f "$dir/$f" ] && cp "$dir/$f" "$w/$order/"
  done
  [ -d "$dir/kernels" ] && cp -r "$dir/kernels" "$w/$order/kernels"
  "$ak" status --run "$dir" > "$w/$order/status.txt" 2>&1
  say "$order: $(tail -n +2 "$dir/results.tsv" 2>/dev/null | wc -l) experiments, $(tail -1 "$w/$order/run.log")"
}

rm -rf /tmp/autokernel-cache-tuner-on /tmp/autokernel-cache-tuner-off
if [ "$parallel" = 1 ]; then
  one_run "${runs[0]}" "${gpus[0]}" &
  first=$!
  one_run "${runs[1]}" "${gpus[1]}" &
  second=$!
  wait "$first"; wait "$second"
else
  for o in "${runs[@]}"; do one_run "$o" "${gpus[0]}"; done
fi

# Each type's two bests on one GPU: the "on" best timed beside the "off" best, launch for launch.
if [ "$rebench" = 1 ] && [ -d "$w/on/kernels" ] && [ -d "$w/off/kernels" ]; then
  say "bests benched again on GPU ${gpus[0]}, on beside off"
  python3 - "$w/on/state.json" > "$w/rebench-plan.txt" <<'EOF'
import json, sys
for k in json.load(open(sys.argv[1])).get("kernels", []):
    print(k["tag"], k["type"], k["shape"], k["dtype"])
EOF
  while read -r tag type shape dtype; do
    [ -f "$w/on/kernels/$tag.cu" ] && [ -f "$w/off/kernels/$tag.cu" ] || continue
    [ $(( $(date +%s) - t0 )) -lt $(( budget - 20 )) ] || { say "rebench: out of time before $tag"; break; }
    CUDA_VISIBLE_DEVICES=${gpus[0]} AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache-tuner-on \
      "$ak" bench "$w/on/kernels/$tag.cu" --beside "$w/off/kernels/$tag.cu" --kernel "$type" --shape "$shape" \
      --dtype "$dtype" --no-counters --json >> "$w/rebench.jsonl" 2>> "$w/rebench.log"
  done < "$w/rebench-plan.txt"
fi

python3 tests/gpu/summarize-tuner-comparison.py "$w" > "$w/summary.md" 2> "$w/summary.err"
cat "$w/summary.md" "$w/summary.err"
tar -czf "$out/tuner-comparison.tar.gz" -C "$out" tuner-comparison
say done
