#!/usr/bin/env bash
# How the loop scales over the GPUs of one box, every leg on the same machine in one call:
# config/scaling.toml (24 memory-bound kernels, the builtin tuner, the default convergence rules)
# run to convergence with 1, 2, 4 and 8 GPUs (those the machine has), one leg after the other; each
# leg's bests benched again on GPU 0 (chips differ by a few percent); then, on every GPU, a kill -9
# with an experiment in flight on each and the resume, checked for numbers lost or recorded twice.
# On the GPU machine, from the repository root, after tests/gpu/gpu-round.sh bundle. Writes
# scaling.tar.gz and scaling-summary.md (tests/gpu/summarize-scaling.py) to $OUT.
#   AK_SCALING_LEGS="1 2 4 8"   the GPU counts to run (default: 1, 2, 4, 8 up to the machine's count)
#   AK_SCALING_KILL=0           leave out the kill -9 leg
#   AK_SCALING_REBENCH=0        leave out benching the bests again
#   AK_SCALING_KERNELS=N        the first N [[kernel]] entries of config/scaling.toml only (default: all)
#   AK_SCALING_COUNTERS=0       every leg with [harness] counters = false (no CUPTI range profiler)
#   AK_SCALING_SECONDS=S        bench the bests again only while S seconds from the start have not
#                               passed, so that the summary and the tar are written within a call's
#                               limit (the kernels not benched again say "-")
# Every leg's workers time their CUDA driver calls (AUTOKERNEL_DRIVER_TIMES, driver-times-N/): the
# summary says which calls took longest, and how many of them waited over a millisecond.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-round-out}
w=$out/scaling
mkdir -p "$w"
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64
export AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache
ak=$PWD/.gpu-bundle/autokernel
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$w/progress.txt"; }

nvidia-smi -L > "$w/gpus.txt" 2>&1
gpus=$(grep -c '^GPU ' "$w/gpus.txt")
legs=${AK_SCALING_LEGS:-$(for n in 1 2 4 8; do [ "$n" -le "$gpus" ] && printf '%s ' "$n"; done)}
say "$gpus GPUs; legs: $legs"

# config/scaling.toml (its first AK_SCALING_KERNELS kernels) as leg NAME on the first N GPUs.
leg_config() {
  local n=$1 name=$2 devices
  devices=$(seq -s ', ' 0 $(( n - 1 )))
  sed -e "s/^name = \"scaling\"/name = \"$name\"/" -e "s/^devices = \"all\"/devices = [$devices]/" config/scaling.toml |
    awk -v keep="${AK_SCALING_KERNELS:-0}" '/^\[\[kernel\]\]/ { k++ } keep == 0 || k <= keep { print }' \
    > "config/$name.generated.toml"
  [ "${AK_SCALING_COUNTERS:-1}" = 0 ] && printf '\n[harness]\ncounters = false\n' >> "config/$name.generated.toml"
  echo "config/$name.generated.toml"
}

# Every leg finds the GPUs' peaks cached: the first leg alone would otherwise measure them.
for g in $(seq 0 $(( gpus - 1 ))); do
  "$ak" bench starter --kernel rmsnorm --device "$g" --no-counters > "$w/warm-$g.log" 2>&1 &
done
wait
say "peaks cached: $(ls "$AUTOKERNEL_CACHE_DIR" 2>/dev/null | tr '\n' ' ')"

for n in $legs; do
  cfg=$(leg_config "$n" "scaling-$n")
  rm -rf "runs/scaling-$n"
  say "leg $n: run"
  start=$(date +%s%N)
  mkdir -p "$w/driver-times-$n"
  AUTOKERNEL_DRIVER_TIMES="$w/driver-times-$n" "$ak" run --config "$cfg" > "$w/leg-$n.log" 2>&1
  echo "exit $?" >> "$w/leg-$n.log"
  echo "$n $(( ($(date +%s%N) - start) / 1000000 ))" >> "$w/wall.txt"
  cp "runs/scaling-$n/results.tsv" "$w/leg-$n-results.tsv"
  cp "runs/scaling-$n/state.json" "$w/leg-$n-state.json"
  cp "runs/scaling-$n/autokernel.log" "$w/leg-$n-daemon.log"
  tar -cf "$w/leg-$n-verdicts.tar" -C "runs/scaling-$n" experiments 2>/dev/null
  "$ak" status --run "runs/scaling-$n" > "$w/leg-$n-status.txt" 2>&1
  say "leg $n: $(tail -n +2 "runs/scaling-$n/results.tsv" | wc -l) experiments"
done

# Every leg's best of each kernel, benched again side by side on GPU 0.
[ "${AK_SCALING_REBENCH:-1}" = 1 ] && say "bests benched again on GPU 0"
python3 - "$legs" > "$w/rebench-plan.txt" <<'EOF'
import json, sys
plan = {}
for n in sys.argv[1].split():
    for k in json.load(open(f"runs/scaling-{n}/state.json"))["kernels"]:
        plan.setdefault((k["tag"], k["type"], k["shape"]), []).append(f"runs/scaling-{n}/kernels/{k['tag']}.cu")
for (tag, type_, shape), files in sorted(plan.items()):
    print(type_, shape, *files)
EOF
while read -r type shape files; do
  if [ -n "${AK_SCALING_SECONDS:-}" ] && [ $(( $(date +%s) - t0 )) -ge "$AK_SCALING_SECONDS" ]; then
    say "bests benched again: stopped at ${AK_SCALING_SECONDS} s, before $type $shape"
    break
  fi
  # Times only: the counters would add a profiler's start to every bench.
  # shellcheck disable=SC2086  # the files are one argument each
  "$ak" bench $files --kernel "$type" --shape "$shape" --device 0 --no-counters --json >> "$w/rebench.jsonl" 2>> "$w/rebench.log"
done < <([ "${AK_SCALING_REBENCH:-1}" = 1 ] && cat "$w/rebench-plan.txt")

if [ "${AK_SCALING_KILL:-1}" = 1 ]; then
  # kill -9 once every GPU has an experiment in flight (and some rows are written), then the resume.
  cfg=$(leg_config "$gpus" scaling-kill9)
  rm -rf runs/scaling-kill9
  say "kill -9 with $gpus experiments in flight"
  "$ak" run --config "$cfg" > "$w/kill9-first.log" 2>&1 &
  pid=$! in_flight=0
  for _ in $(seq 1 1200); do
    sleep 0.1
    [ -f runs/scaling-kill9/in_flight.json ] && in_flight=$(grep -c '"experiment"' runs/scaling-kill9/in_flight.json)
    [ -f runs/scaling-kill9/results.tsv ] && [ "$(wc -l < runs/scaling-kill9/results.tsv)" -gt $(( 2 * gpus )) ] &&
      [ "$in_flight" -ge "$gpus" ] && break
  done
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  cp runs/scaling-kill9/in_flight.json "$w/kill9-in-flight-at-kill.json"
  cp runs/scaling-kill9/results.tsv "$w/kill9-results-at-kill.tsv"
  say "resume"
  "$ak" run --config "$cfg" > "$w/kill9-resume.log" 2>&1
  echo "exit $?" >> "$w/kill9-resume.log"
  cp runs/scaling-kill9/results.tsv "$w/kill9-results.tsv"
  cut -f1 runs/scaling-kill9/results.tsv | tail -n +2 | sort -n | uniq -d > "$w/kill9-duplicates.txt"
  cut -f1 runs/scaling-kill9/results.tsv | tail -n +2 | sort -n |
    awk 'NR > 1 && $1 != last + 1 { print "gap after " last } { last = $1 }' > "$w/kill9-gaps.txt"
  say "kill -9: $(grep -c '"experiment"' "$w/kill9-in-flight-at-kill.json") in flight at the kill; duplicates: $(wc -l < "$w/kill9-duplicates.txt"), gaps: $(wc -l < "$w/kill9-gaps.txt")"
fi

python3 tests/gpu/summarize-scaling.py "$w" > "$out/scaling-summary.md"
cat "$out/scaling-summary.md"
tar -czf "$out/scaling.tar.gz" -C "$out" scaling
say done
