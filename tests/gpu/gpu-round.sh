#!/usr/bin/env bash
# The GPU round, always the same: build and bundle here, run there, read the numbers back.
#   tests/gpu/gpu-round.sh bundle   on the build machine: Release build + .gpu-bundle/
#   tests/gpu/gpu-round.sh loop     on the GPU machine: the quickstart run, stopped by SIGTERM, killed
#                                 with SIGKILL, resumed to convergence; writes run.log, status.txt,
#                                 results.tsv, gitlog.txt, report.md, progress.svg to $OUT
#   tests/gpu/gpu-round.sh llm      on the GPU machine: a run with provider openai against
#                                 tests/fixtures/scripted-llm-server.py on 127.0.0.1; writes llm-* to $OUT
#   tests/gpu/gpu-round.sh profile  on the GPU machine: the example models under autokernel profile,
#                                 torch.profiler beside it, and plan; writes <model>.log/.json to $OUT
#   tests/gpu/gpu-round.sh library  on the GPU machine: the [gpu] tests, then every kernel type's
#                                 starter benched at its benchmark shape (fp16, and bf16 for the
#                                 tensor-core types); writes library-tests.log, library.jsonl
#   tests/gpu/gpu-round.sh tune     on the GPU machine: the [gpu] tests, then config/tensor-cores.toml
#                                 (the builtin tuner on matmul, flash_attention, fused_mlp for six
#                                 minutes); writes tune-tests.log, tune.log, tune-* to $OUT
#   tests/gpu/gpu-round.sh bundle-before REV   on the build machine: REV built in a worktree and
#                                 bundled into .gpu-bundle/before/, to time it beside this build
#   tests/gpu/gpu-round.sh integrity on the GPU machine: the starters benched by the bundled REV and
#                                 by this build (paired with the starter: the loop's evaluation),
#                                 10 candidates' full evaluation time, compile times of both, the
#                                 loop against tests/fixtures/scripted-llm-server.py --cheats, the
#                                 [sandbox] and [gpu] tests; writes integrity.tar.gz to $OUT
#   tests/gpu/gpu-round.sh parallel on a GPU machine with two GPUs of one model: config/two-gpus.toml
#                                 with one GPU, then with two (same budget), then a kill -9 with
#                                 two experiments in flight and the resume; writes parallel.tar.gz
#   tests/gpu/gpu-round.sh variants on the GPU machine: the [variants] tests (every variant through the
#                                 five stages), then each type's starter and variants benched at
#                                 the benchmark shape (fp16); writes variants.tar.gz to $OUT
#   tests/gpu/gpu-round.sh nine     on the GPU machine: config/nine-types.toml (all nine types, the
#                                 builtin tuner with its variants, a wall-time budget), then
#                                 tests/gpu/pytorch-baselines.py on the same GPU; writes nine.tar.gz
#   tests/gpu/gpu-round.sh run      on the GPU machine, from the repository root; writes to $OUT
#                                 (or ./gpu-round-out): gpu.txt, tests.log, bench.jsonl (one verdict a line), round.log
#   tests/gpu/gpu-round.sh trust    on the GPU machine: the [gpu][cheat] suite, the rest of [gpu], the
#                                 starters benched 5 times paired with themselves, 10 candidates'
#                                 full evaluation (and the same by the build bundle-before left, if
#                                 any), the loop against tests/fixtures/scripted-llm-server.py --cheats,
#                                 and the processes left behind; writes trust.tar.gz
#   tests/gpu/gpu-round.sh tensor   on the GPU machine: the tensor-map and cluster tests, the tensor-core
#                                 variants benched in fp16 and bf16, the libraries timed the same
#                                 way, then config/tensor-cores.toml (TENSOR_LOOP=0 skips it);
#                                 writes tensor.tar.gz to $OUT
#   tests/gpu/gpu-round.sh short-rows on the GPU machine: rmsnorm's starter and variants benched at a
#                                 decoder's q/k-norm rows (65536 and 16384 rows of 128, fp16 and
#                                 bf16), config/short-rows.toml (the builtin tuner there), then
#                                 PyTorch at the same shapes; writes short-rows.tar.gz to $OUT
# Then docs/harness-benchmarks.md gets the numbers (tests/gpu/summarize-gpu-round.py prints them).
set -uo pipefail
cd "$(dirname "$0")/../.."

bundle() {
  set -e
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)"
  rm -rf .gpu-bundle
  ../shared/tools/bundle-libs build/autokernel build/tests/autokernel_tests build/libautokernel_inject.so .gpu-bundle
  strip .gpu-bundle/autokernel .gpu-bundle/autokernel_tests .gpu-bundle/libautokernel_inject.so
}

bundle_before() {
  set -e
  local rev=${1:?usage: gpu-round.sh bundle-before REV} tree=/tmp/autokernel-before
  git worktree add -f "$tree" "$rev" >/dev/null 2>&1 || (cd "$tree" && git checkout -q "$rev")
  cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$tree/build" -j"$(nproc)" --target autokernel
  rm -rf .gpu-bundle/before
  ../shared/tools/bundle-libs "$tree/build/autokernel" .gpu-bundle/before
  strip .gpu-bundle/before/autokernel
  git -C "$tree" rev-parse --short HEAD > .gpu-bundle/before/REV
}

# What every action on the GPU machine starts from: the bundle's libraries, a cache for the
# measured peaks, $out for what comes back, $ak the binary.
device_env() {
  out=${OUT:-$PWD/gpu-round-out}
  mkdir -p "$out"
  export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64
  export AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache
  ak=$PWD/.gpu-bundle/autokernel
}

# One knob line of a starter rewritten: variant TYPE KNOB VALUE > file
variant() { sed -E "s/^#define $2 [0-9]+/#define $2 $3/" "kernels_cuda/$1/$1.cu"; }

# The five knob variants of a starter the rounds time as candidates, written to /tmp/variants;
# sets the array `files` to their paths.
knob_variants() {
  mkdir -p /tmp/variants
  files=()
  local kv
  for kv in "AK_THREADS 128" "AK_THREADS 512" "AK_VEC 8" "AK_ROWS_PER_BLOCK 2" "AK_THREADS 1024"; do
    set -- $kv
    variant "$type" "$1" "$2" > "/tmp/variants/$type-$1-$2.cu"
    files+=("/tmp/variants/$type-$1-$2.cu")
  done
}

run() {
  device_env
  mkdir -p /tmp/variants
  exec > >(tee "$out/round.log") 2>&1
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"

  echo "== [gpu] tests"
  .gpu-bundle/autokernel_tests "[gpu]" -d yes > "$out/tests.log" 2>&1; echo "tests exit $?"; tail -3 "$out/tests.log"

  echo "== compile report on this machine"
  "$ak" compile starter --kernel rmsnorm
  echo "== starters, 5 times in a row in one worker (timing spread), fp16 8192x8192"
  : > "$out/bench.jsonl"
  for type in rmsnorm softmax; do
    "$ak" bench starter starter starter starter starter --kernel "$type" --json >> "$out/bench.jsonl"
  done
  echo "== 10 candidates (knob variants) in one worker: time of a full evaluation"
  local files=()
  for type in rmsnorm softmax; do
    knob_variants
    "$ak" bench "${files[@]}" --kernel "$type" --json >> "$out/bench.jsonl"
  done
  echo "== other dtypes of the starters"
  for type in rmsnorm softmax; do
    for dt in bf16 fp32; do "$ak" bench starter --kernel "$type" --dtype "$dt" --json >> "$out/bench.jsonl"; done
  done
  echo "== human-readable bench of each starter"
  "$ak" bench starter --kernel rmsnorm
  "$ak" bench starter --kernel softmax
  date -u
}

# The loop against tests/fixtures/scripted-llm-server.py --cheats, for at most $2 seconds: run log,
# status, results, git log and the files holding a marker of the daemon's environment in $1.
cheat_loop() {
  local work=$1 limit=$2
  echo "== the loop against an LLM server that answers with cheats"
  python3 tests/fixtures/scripted-llm-server.py 8766 --cheats --marker AKGPUMARKER9981 2> "$work/cheat-server.log" &
  local server=$!
  sleep 1
  AK_DAEMON_SECRET=AKGPUMARKER9981 timeout "$limit" "$ak" run --config config/cheating-llm.toml > "$work/cheat-run.log" 2>&1; echo "run exit $?"
  kill $server; timeout 10 tail --pid=$server -f /dev/null
  "$ak" status --run runs/cheating-llm > "$work/cheat-status.txt" 2>&1
  cp runs/cheating-llm/results.tsv "$work/cheat-results.tsv"
  (cd runs/cheating-llm && git log --format='%h %s') > "$work/cheat-gitlog.txt"
  grep -rl AKGPUMARKER9981 runs/cheating-llm > "$work/cheat-marker-files.txt"; echo "files holding the marker: $(wc -l < "$work/cheat-marker-files.txt")"
  cut -f1,4,5,8,10,14 "$work/cheat-results.tsv"; tail -1 "$work/cheat-server.log"
}

integrity() {
  device_env
  local work=/tmp/integrity before=$PWD/.gpu-bundle/before/autokernel
  rm -rf "$work" runs/cheating-llm && mkdir -p "$work" /tmp/variants
  exec > >(tee "$work/integrity.log") 2>&1
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$work/gpu.txt"
  echo "before = $(cat .gpu-bundle/before/REV 2>/dev/null), after = this tree"
  echo "== starters 5 times in one worker, before (timed alone) and after (paired with the starter)"
  for type in rmsnorm softmax; do
    LD_LIBRARY_PATH=$PWD/.gpu-bundle/before/lib:/usr/local/cuda/lib64 "$before" bench starter starter starter starter starter \
      --kernel "$type" --json > "$work/before-$type.jsonl" || echo "before $type exit $?"
    "$ak" bench starter starter starter starter starter --kernel "$type" --beside starter --json > "$work/after-$type.jsonl" || echo "after $type exit $?"
  done
  echo "== 10 candidates (knob variants), each paired with the starter as the loop pairs it with the best"
  local files=()
  for type in rmsnorm softmax; do
    knob_variants
    "$ak" bench "${files[@]}" --kernel "$type" --beside starter --json > "$work/candidates-after-$type.jsonl" || echo "candidates $type exit $?"
    LD_LIBRARY_PATH=$PWD/.gpu-bundle/before/lib:/usr/local/cuda/lib64 "$before" bench "${files[@]}" --kernel "$type" --json \
      > "$work/candidates-before-$type.jsonl" || echo "before candidates $type exit $?"
  done
  echo "== compile times, 3 each, before and after (the sandbox)"
  for type in rmsnorm softmax layernorm reduce rotary_embedding cross_entropy matmul flash_attention fused_mlp; do
    for i in 1 2 3; do
      LD_LIBRARY_PATH=$PWD/.gpu-bundle/before/lib:/usr/local/cuda/lib64 "$before" compile starter --kernel "$type" --json \
        | python3 -c "import json,sys; print('before $type', json.load(sys.stdin)['seconds'])"
      "$ak" compile starter --kernel "$type" --json | python3 -c "import json,sys; print('after $type', json.load(sys.stdin)['seconds'])"
    done
  done > "$work/compile-times.txt"
  cheat_loop "$work" 240
  echo "== [sandbox] tests here"
  .gpu-bundle/autokernel_tests "[sandbox]" > "$work/sandbox-tests.log" 2>&1; echo "sandbox tests exit $?"; tail -2 "$work/sandbox-tests.log"
  echo "== [gpu] tests"
  timeout "${GPU_TESTS_TIMEOUT:-300}" .gpu-bundle/autokernel_tests "[gpu]" -d yes > "$work/gpu-tests.log" 2>&1; echo "gpu tests exit $?"
  grep -E "FAILED|passed|failed|cheat beside" "$work/gpu-tests.log" | tail -20
  date -u
  tar -czf "$out/integrity.tar.gz" -C /tmp integrity
}

trust() {
  device_env
  local work=/tmp/trust files=()
  rm -rf "$work" runs/cheating-llm && mkdir -p "$work" /tmp/variants
  exec > >(tee "$work/trust.log") 2>&1
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$work/gpu.txt"
  echo "== [gpu][cheat]"
  timeout 240 .gpu-bundle/autokernel_tests "[gpu][cheat]" -d yes > "$work/cheat-tests.log" 2>&1; echo "cheat tests exit $?"
  grep -E "FAILED|^state |cheat beside|test cases|assertions" "$work/cheat-tests.log" | tail -30
  echo "== the rest of [gpu]"
  timeout "${GPU_TESTS_TIMEOUT:-240}" .gpu-bundle/autokernel_tests "[gpu]~[cheat]" -d yes > "$work/gpu-tests.log" 2>&1; echo "gpu tests exit $?"
  grep -E "FAILED|test cases|assertions" "$work/gpu-tests.log" | tail -12
  echo "== starters 5 times in one worker, each paired with the starter"
  for type in rmsnorm softmax; do
    "$ak" bench starter starter starter starter starter --kernel "$type" --beside starter --json > "$work/starters-$type.jsonl" || echo "bench $type exit $?"
  done
  echo "== 10 candidates (knob variants), each paired with the starter"
  for type in rmsnorm softmax; do
    knob_variants
    "$ak" bench "${files[@]}" --kernel "$type" --beside starter --json > "$work/candidates-$type.jsonl" || echo "candidates $type exit $?"
  done
  if [[ -x .gpu-bundle/before/autokernel ]]; then
    echo "== the same, by the bundled earlier build (bundle-before), on this GPU in this call"
    for type in rmsnorm softmax; do
      knob_variants
      LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64 .gpu-bundle/before/autokernel bench starter starter \
        starter starter starter --kernel "$type" --beside starter --json > "$work/before-starters-$type.jsonl" || echo "before bench $type exit $?"
      LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64 .gpu-bundle/before/autokernel bench "${files[@]}" \
        --kernel "$type" --beside starter --json > "$work/before-candidates-$type.jsonl" || echo "before candidates $type exit $?"
    done
  fi
  python3 - "$work" <<'PY'
import json, sys, glob, statistics
for f in sorted(glob.glob(sys.argv[1] + "/*.jsonl")):
    vs = [json.loads(l) for l in open(f) if l.strip()]
    med = [v.get("timing", {}).get("median_us", 0) for v in vs]
    tot = [v.get("total_seconds", 0) for v in vs]
    pr = ["%.4f+-%.4f" % (v["paired"]["ratio"], v["paired"]["noise"]) for v in vs if "paired" in v]
    print(f.split("/")[-1], [v["correctness"] for v in vs].count("PASS"), "pass; medians", ["%.2f" % m for m in med],
          "; eval s median %.2f max %.2f" % (statistics.median(tot), max(tot)), "; paired", pr)
PY
  cheat_loop "$work" "${CHEAT_LOOP_TIMEOUT:-150}"
  echo "== processes left behind"; ps -eo pid,ppid,pcpu,rss,args | grep -E "compile-server|autokernel" | grep -v grep || echo none
  date -u
  tar -czf "$out/trust.tar.gz" -C /tmp trust
}

# The compile stage of 10 distinct candidates in a warm worker, as the loop meets it: this build
# (the sandbox) beside the bundled REV, with and without CUDA's compute cache.
compile_times() {
  device_env
  local before=$PWD/.gpu-bundle/before/autokernel files=()
  mkdir -p /tmp/variants
  for type in rmsnorm softmax; do
    knob_variants
    "$ak" bench starter "${files[@]}" --kernel "$type" --json > "$out/compile-after-$type.jsonl"
    CUDA_CACHE_DISABLE=1 LD_LIBRARY_PATH=$PWD/.gpu-bundle/before/lib:/usr/local/cuda/lib64 "$before" bench starter "${files[@]}" \
      --kernel "$type" --json > "$out/compile-before-nocache-$type.jsonl"
    rm -rf ~/.nv/ComputeCache
    LD_LIBRARY_PATH=$PWD/.gpu-bundle/before/lib:/usr/local/cuda/lib64 "$before" bench starter "${files[@]}" \
      --kernel "$type" --json > "$out/compile-before-$type.jsonl"
  done
  python3 - "$out" <<'PY'
import glob, json, statistics, sys
for f in sorted(glob.glob(sys.argv[1] + "/compile-*.jsonl")):
    s = [st["seconds"] for l in open(f) for st in json.loads(l)["stages"] if st["name"] == "compile"][1:]
    print(f.split("/")[-1], "compile s (10 candidates, warm worker):", [round(x, 3) for x in s], "median", round(statistics.median(s), 3))
PY
}

library() {
  device_env
  exec > >(tee "$out/library.log") 2>&1
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
  echo "== [gpu] tests"
  timeout 330 .gpu-bundle/autokernel_tests "[gpu]" -d yes > "$out/library-tests.log" 2>&1; echo "tests exit $?"
  grep -E "FAILED|passed|failed" "$out/library-tests.log" | tail -15
  echo "== every starter at its benchmark shape"
  : > "$out/library.jsonl"
  for type in rmsnorm softmax layernorm reduce rotary_embedding cross_entropy matmul flash_attention fused_mlp; do
    "$ak" bench starter --kernel "$type" --json >> "$out/library.jsonl" || echo "bench $type exit $?"
  done
  for type in matmul flash_attention fused_mlp; do
    "$ak" bench starter --kernel "$type" --dtype bf16 --json >> "$out/library.jsonl" || echo "bench $type bf16 exit $?"
  done
  echo "== matmul: the cp.async stages at the starter's tiles and at the tuner's best tiles"
  local tuned="AK_TILE_M=128 AK_TILE_N=128 AK_TILE_K=128"
  for config in "AK_STAGES=2" "AK_STAGES=3" "$tuned" "$tuned AK_STAGES=2" "$tuned AK_STAGES=3"; do
    local file="/tmp/variants/matmul-${config// /-}.cu"
    mkdir -p /tmp/variants
    cp kernels_cuda/matmul/matmul.cu "$file"
    for kv in $config; do sed -i -E "s/^#define ${kv%=*} [0-9]+/#define ${kv%=*} ${kv#*=}/" "$file"; done
    "$ak" bench "$file" --kernel matmul --json >> "$out/library.jsonl" || echo "bench $config exit $?"
  done
  date -u
}

tune() {
  device_env
  rm -rf runs/tensor-cores
  exec > >(tee "$out/tune.log") 2>&1
  date -u
  timeout 150 .gpu-bundle/autokernel_tests "[gpu]" -d yes > "$out/tune-tests.log" 2>&1; echo "tests exit $?"
  grep -E "FAILED|passed|failed" "$out/tune-tests.log" | tail -8
  "$ak" run --config config/tensor-cores.toml > "$out/tune-run.log" 2>&1; echo "run exit $?"
  "$ak" status --run runs/tensor-cores > "$out/tune-status.txt" 2>&1
  "$ak" report --run runs/tensor-cores --out "$out"
  cp runs/tensor-cores/results.tsv "$out/tune-results.tsv"
  (cd runs/tensor-cores && git log --format='%h %s') > "$out/tune-gitlog.txt"
  cat "$out/tune-status.txt"
  date -u
}

parallel() {
  device_env
  local w="$out/parallel" cfg1=config/one-gpu.generated.toml
  mkdir -p "$w"
  nvidia-smi -L > "$w/gpus.txt" 2>&1
  local budget=${AK_PARALLEL_BUDGET:-48}   # experiments per leg
  sed -i "s/^max_experiments = .*/max_experiments = $budget/" config/two-gpus.toml
  sed -e 's/^devices = \[0, 1\]/devices = [0]/' -e 's/^name = "two-gpus"/name = "one-gpu"/' config/two-gpus.toml > "$cfg1"
  rm -rf runs/one-gpu runs/two-gpus runs/kill9
  for rep in $(seq 1 "${AK_PARALLEL_REPEATS:-1}"); do
    rm -rf runs/one-gpu runs/two-gpus
    for leg in "$cfg1" config/two-gpus.toml; do
      local t0=$(date +%s%N) name=$(basename "$leg" .toml)
      "$ak" run --config "$leg" > "$w/$name-$rep.log" 2>&1; echo "exit $?" >> "$w/$name-$rep.log"
      echo "$name rep $rep wall_ms $(( ($(date +%s%N) - t0) / 1000000 ))" >> "$w/wall.txt"
    done
    for r in one-gpu two-gpus; do
      "$ak" status --run runs/$r > "$w/$r-status-$rep.txt" 2>&1
      cp runs/$r/results.tsv "$w/$r-results-$rep.tsv"
    done
  done
  # kill -9 with two experiments in flight, then the resume.
  sed -e 's/^name = "two-gpus"/name = "kill9"/' -e 's/^max_experiments = .*/max_experiments = 24/' config/two-gpus.toml > config/kill9.generated.toml
  "$ak" run --config config/kill9.generated.toml > "$w/kill9-first.log" 2>&1 &
  local pid=$! n=0
  for _ in $(seq 1 600); do
    sleep 0.1
    [ -f runs/kill9/in_flight.json ] && n=$(grep -c '"experiment"' runs/kill9/in_flight.json)
    [ -f runs/kill9/results.tsv ] && [ "$(wc -l < runs/kill9/results.tsv)" -gt 8 ] && [ "$n" -ge 2 ] && break
  done
  kill -9 $pid; wait $pid 2>/dev/null
  cp runs/kill9/in_flight.json "$w/kill9-in-flight-at-kill.json"
  cp runs/kill9/results.tsv "$w/kill9-results-at-kill.tsv"
  "$ak" run --config config/kill9.generated.toml > "$w/kill9-resume.log" 2>&1; echo "exit $?" >> "$w/kill9-resume.log"
  cp runs/kill9/results.tsv "$w/kill9-results.tsv"
  cut -f1 runs/kill9/results.tsv | tail -n +2 | sort -n | uniq -d > "$w/kill9-duplicates.txt"
  "$ak" status --run runs/kill9 > "$w/kill9-status.txt" 2>&1
  (cd runs/kill9 && git log --format='%h %s') > "$w/kill9-gitlog.txt"
  tar -czf "$out/parallel.tar.gz" -C "$out" parallel && rm -rf "$w"
}

loop() {
  device_env
  rm -rf runs/quickstart
  {
    date -u
    echo "== run, stopped with SIGTERM after 25 s"
    timeout --preserve-status -s TERM 25 "$ak" run --config config/quickstart.toml; echo "exit $?"
    echo "== resumed, killed with SIGKILL after 20 s"
    timeout --preserve-status -s KILL 20 "$ak" run --config config/quickstart.toml; echo "exit $?"
    echo "== resumed to the end"
    local t0=$(date +%s)
    "$ak" run --config config/quickstart.toml; echo "exit $?"
    echo "last leg: $(( $(date +%s) - t0 )) s"
    date -u
  } > "$out/run.log" 2>&1
  "$ak" status --run runs/quickstart > "$out/status.txt" 2>&1
  "$ak" report --run runs/quickstart --out "$out"
  cp runs/quickstart/results.tsv "$out/"
  (cd runs/quickstart && git log --format='%h %s%n%b' ) > "$out/gitlog.txt"
  cat "$out/status.txt"
}

llm() {
  device_env
  rm -rf runs/scripted-llm
  python3 tests/fixtures/scripted-llm-server.py 8765 2> "$out/llm-server.log" &
  local server=$!
  sleep 1
  "$ak" run --config config/scripted-llm.toml > "$out/llm-run.log" 2>&1; echo "exit $?" >> "$out/llm-run.log"
  kill $server
  "$ak" status --run runs/scripted-llm > "$out/llm-status.txt" 2>&1
  cp runs/scripted-llm/results.tsv "$out/llm-results.tsv"
  (cd runs/scripted-llm && git log --format='%h %s' && ls transcripts) > "$out/llm-gitlog.txt"
  cp "$(ls runs/scripted-llm/transcripts/*.json | sed -n 2p)" "$out/llm-transcript.json"
  cat "$out/llm-status.txt"
}

profile() {
  device_env
  cd examples/models
  for model in gpt2_small llama_block; do
    {
      echo "== $model: plain, twice"
      python3 $model.py --steps 20; python3 $model.py --steps 20
      echo "== $model: under autokernel profile, no NVTX (overhead)"
      local t0=$(date +%s%N)
      "$ak" profile --out "$out/$model-plain.json" -- python3 $model.py --steps 20
      echo "profiled wall: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
      echo "== $model: under autokernel profile, with NVTX shapes"
      "$ak" profile --keep-records --top 12 --out "$out/$model.json" -- python3 $model.py --steps 20 --nvtx
      echo "== $model: torch.profiler on the same steps"
      python3 $model.py --steps 20 --torch-profiler
      echo "== $model: plan"
      "$ak" plan "$out/$model.json" --top 8
    } > "$out/$model.log" 2>&1
    rm -f "$out/$model-plain.json"
  done
  cd ../..
  tail -n 12 "$out/gpt2_small.log" "$out/llama_block.log"
}

variants() {
  device_env
  local w="$out/variants"
  mkdir -p "$w"
  .gpu-bundle/autokernel_tests "[variants]" -d yes > "$w/tests.log" 2>&1; echo "exit $?" >> "$w/tests.log"
  for dir in kernels_cuda/*/variants; do
    local t=$(basename "$(dirname "$dir")")
    "$ak" bench starter "$dir"/*.cu --kernel "$t" --json > "$w/$t.jsonl" 2> "$w/$t.log"
  done
  tar -czf "$out/variants.tar.gz" -C "$out" variants && rm -rf "$w"
}

short_rows() {
  device_env
  local w="$out/short-rows"
  mkdir -p "$w"
  for shape in 65536x128 16384x128; do
    for dtype in fp16 bf16; do
      "$ak" bench starter kernels_cuda/rmsnorm/variants/*.cu --kernel rmsnorm --shape "$shape" --dtype "$dtype" --json \
        > "$w/bench-$shape-$dtype.jsonl" 2> "$w/bench-$shape-$dtype.log"
    done
  done
  rm -rf runs/short-rows
  local t0=$(date +%s)
  "$ak" run --config config/short-rows.toml > "$w/run.log" 2>&1; echo "exit $? after $(( $(date +%s) - t0 )) s" >> "$w/run.log"
  "$ak" status --run runs/short-rows > "$w/status.txt" 2>&1
  cp runs/short-rows/results.tsv "$w/" 2>/dev/null
  python3 tests/gpu/pytorch-baselines.py rmsnorm@65536x128 rmsnorm@16384x128 > "$w/torch.jsonl" 2> "$w/torch.err"
  tar -czf "$out/short-rows.tar.gz" -C "$out" short-rows && rm -rf "$w"
}

nine() {
  device_env
  local w="$out/nine"
  mkdir -p "$w"
  rm -rf runs/nine-types
  local t0=$(date +%s)
  "$ak" run --config config/nine-types.toml > "$w/run.log" 2>&1; echo "exit $? after $(( $(date +%s) - t0 )) s" >> "$w/run.log"
  "$ak" status --run runs/nine-types > "$w/status.txt" 2>&1
  "$ak" report --run runs/nine-types --out "$w/report" > "$w/report.log" 2>&1
  cp runs/nine-types/results.tsv "$w/"
  cp -r runs/nine-types/kernels "$w/best-kernels"
  # The best files again, alone: CUPTI and CUDA-event medians side by side, for the comparison
  # with do_bench's event timing of PyTorch.
  for f in runs/nine-types/kernels/*.cu; do
    "$ak" bench "$f" --kernel "$(basename "$f" .cu)" --json >> "$w/best-bench.jsonl" 2>> "$w/best-bench.log"
  done
  (cd runs/nine-types && git log --format='%h %s') > "$w/gitlog.txt"
  python3 tests/gpu/pytorch-baselines.py > "$w/torch.jsonl" 2> "$w/torch.err"
  tar -czf "$out/nine.tar.gz" -C "$out" nine && rm -rf "$w"
}

# The tensor-core types against the libraries: the TMA/cluster contract's [gpu] tests, every
# matmul, flash_attention and fused_mlp variant benched in fp16 and bf16 at the benchmark shape
# (matmul's also at the decoder's shapes), then cuBLAS, SDPA and torch.compile timed the same way
# (tests/gpu/tensor-core-library.py) in this call; then config/tensor-cores.toml to convergence.
tensor() {
  device_env
  local w="$out/tensor"
  mkdir -p "$w"
  .gpu-bundle/autokernel_tests "[tensor_maps],[grid_launch]" > "$w/tests.log" 2>&1; echo "exit $?" >> "$w/tests.log"
  for t in matmul flash_attention fused_mlp; do
    for d in fp16 bf16; do
      "$ak" bench kernels_cuda/$t/variants/*.cu --kernel "$t" --dtype "$d" --json >> "$w/bench.jsonl" 2>> "$w/bench.log"
    done
  done
  for shape in 4096x2048x5632 4096x5632x2048 4096x2048x2048; do
    for d in fp16 bf16; do
      "$ak" bench kernels_cuda/matmul/variants/tma_*.cu --kernel matmul --shape "$shape" --dtype "$d" --json \
        >> "$w/decoder.jsonl" 2>> "$w/bench.log"
    done
  done
  python3 tests/gpu/tensor-core-library.py > "$w/library.jsonl" 2> "$w/library.err"
  if [ "${TENSOR_LOOP:-1}" = 1 ]; then
    rm -rf runs/tensor-cores
    "$ak" run --config config/tensor-cores.toml > "$w/run.log" 2>&1; echo "exit $?" >> "$w/run.log"
    cp runs/tensor-cores/results.tsv "$w/" 2>/dev/null
    cp -r runs/tensor-cores/kernels "$w/best-kernels" 2>/dev/null
  fi
  tar -czf "$out/tensor.tar.gz" -C "$out" tensor && rm -rf "$w"
}

case ${1:-} in
  tensor) tensor ;;
  variants) variants ;;
  nine) nine ;;
  short-rows) short_rows ;;
  profile) profile ;;
  llm) llm ;;
  loop) loop ;;
  parallel) parallel ;;
  bundle) bundle ;;
  run) run ;;
  library) library ;;
  integrity) integrity ;;
  trust) trust ;;
  compile-times) compile_times ;;
  bundle-before) bundle_before "${2:-}" ;;
  tune) tune ;;
  *) echo "usage: tests/gpu/gpu-round.sh tensor|bundle|bundle-before REV|run|library|integrity|tune|loop|llm|profile|parallel|variants|nine" >&2; exit 2 ;;
esac
