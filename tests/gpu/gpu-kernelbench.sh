#!/usr/bin/env bash
# The user types on the GPU machine, from the repository root, with .gpu-bundle/ beside it and a
# Python with torch:
#   tests/gpu/gpu-kernelbench.sh tests   the [gpu] tests of the reference process and of user types
#   tests/gpu/gpu-kernelbench.sh loop    examples/kernelbench imported by `autokernel kernelbench`, run by
#                                      the loop against tests/fixtures/scripted-llm-server.py --kernelbench
#                                      (the honest file first, then the wrong, the cheating, and the
#                                      honest one with its block halved and doubled), then `report`
#   tests/gpu/gpu-kernelbench.sh offer   examples/models/vit_mlp.py under `profile --modules`, `plan
#                                      --user-types`, and the loop on the user type it offers (its
#                                      nn.GELU), the scripted server serving examples/models/kernels/gelu.cu
#   tests/gpu/gpu-kernelbench.sh vision  examples/models/vision_blocks.py under `profile --modules` and `plan
#                                      --user-types`: the convolutions, norms and pooling it offers
#   tests/gpu/gpu-kernelbench.sh eval-time  the built-in softmax at kb_log_softmax's size (4096 x 32768
#                                      fp32) under the same scripted loop: each row's seconds are a
#                                      whole evaluation, to set beside the user type's
#   tests/gpu/gpu-kernelbench.sh kb6     six KernelBench problems at their own timed sizes together in ONE
#                                      `autokernel run` on one GPU: level 1's 29_Softplus (4096 x 393216
#                                      fp32) and 39_L2Norm_ (32768 x 65535 fp32), level 2's
#                                      12_Gemm_Multiply_LeakyReLU, 59_Matmul_Swish_Scaling, 63_Gemm_ReLU_Divide
#                                      and 86_Matmul_Divide_GELU. KernelBench's files are not ours to
#                                      commit: copy them first into .gpu-bundle/kb6/problems/ (from
#                                      ScalingIntelligence/KernelBench's KernelBench/level1/ and level2/,
#                                      commit 423217d). The scripted server serves each type our honest
#                                      file of examples/kernelbench/kernels/kb6/ (kb_<stem> from <stem>.cu)
#                                      first, then that file with its block halved and doubled: every
#                                      file served is honest, so a verdict other than PASS is a fault of
#                                      the harness or of the file, and a revert is for speed alone.
#                                      Bounded by KB6_MAX_EXPERIMENTS (default 18: each first file, then
#                                      edits), 2 reverts in a row, and KB6_TIMEOUT seconds (default 420).
#                                      GPU memory is sampled every 0.5 s, the GPU's and each process's
#                                      (tests/gpu/gpu-memory-sampler.py). Writes only $OUT/summary.txt
#                                      (the import; per type its verdicts, its first file kept or not,
#                                      the worker's pool and the reference process's peak; the
#                                      out-of-memory and HARNESS_ERROR lines; whether the claim was met,
#                                      tests/gpu/kernelbench-round-summary.py, also the exit status: 0 met)
#                                      and $OUT/kb6.tar.gz (the config and types, the run folder, the
#                                      run's log raw and filtered, the memory samples, report.md).
#   tests/gpu/gpu-kernelbench.sh kinds [PROBLEM...]
#                                      the launch-plan problems of examples/kernelbench/specs/ (a 2-D and a
#                                      transposed convolution, max pooling, GroupNorm, RMS over channels, a
#                                      cumsum, an argmax, an MSE loss, a batched matmul, a Linear + row max,
#                                      an MLP; PROBLEM is a spec's stem without kb_, default all eleven) in
#                                      one `autokernel run` with a config naming their specs, against
#                                      tests/fixtures/scripted-llm-server.py --kernelbench, which serves each its
#                                      honest file first, then its .wrong and its .cheating one; the run
#                                      stops a kernel after those two reverts. Then `autokernel report`.
#                                      Writes $OUT/kinds-summary.txt (tests/gpu/kernelbench-kinds-summary.py:
#                                      per problem the three verdicts, honest PASS with its speedups over
#                                      eager and torch.compile, wrong and cheat not passing; fast_p; the
#                                      report's KernelBench section) over every kinds run kept in $KB_WORK
#                                      on this machine, so calls that each run a few problems add up (rm
#                                      -rf $KB_WORK/kinds to start over); and $OUT/kinds-<label>.tar.gz.
#                                      Exit status: the summary's: 0 once all eleven problems have run here
#                                      and each is as expected; 1 before that or when one is not.
#                                      torch.compile's autotuning takes minutes a problem: all eleven in one
#                                      call outlast a 10-minute command; three or four a call fit, e.g.
#                                        kinds conv2d_bias conv_transpose2d maxpool2d
#                                        kinds group_norm rms_norm_channels cumsum argmax
#                                        kinds mse_loss batched_matmul linear_rowmax mlp
#                                      KINDS_TIMEOUT (default 540 s) bounds the run; KINDS_TORCH_COMPILE=0
#                                      skips torch.compile (no speedup against it then).
#   tests/gpu/gpu-kernelbench.sh offline 1|2
#                                      one KernelBench level with no LLM: all its problems through
#                                      `autokernel kernelbench --offline` (a built-in type's entry where one
#                                      computes the problem, a first file written from elementwise ops, the
#                                      rest refused or left out for needing an LLM), `kernelbench --baselines`
#                                      (the PyTorch times of the built-in ones), `autokernel run` with the
#                                      builtin tuner on a short budget per kernel, and `autokernel report`.
#                                      The problems: .gpu-bundle/kernelbench/level<N>/*.py (copy
#                                      KernelBench/level<N>/ of ScalingIntelligence/KernelBench, commit 423217d;
#                                      not ours to commit), or $KB_LEVEL_DIR. Prints and writes to
#                                      $OUT/offline-l<N>-summary.txt: how many run offline, fast_1 against
#                                      eager and torch.compile over the whole level (refused and LLM-needing
#                                      problems count as not fast), the time of each phase; and
#                                      $OUT/offline-l<N>.tar.gz (config, types, logs, run folder, report.md).
#                                      Budgets, about 9 minutes in all: OFFLINE_IMPORT_TIMEOUT (default 120 s),
#                                      OFFLINE_BASELINES_TIMEOUT (default 100 s), OFFLINE_RUN_TIMEOUT (default 330 s
#                                      for the run), OFFLINE_KERNEL_S (default 40 s per kernel: a kernel whose first
#                                      evaluation takes that long ends after it), OFFLINE_REVERTS (default 2 in a
#                                      row end a kernel), OFFLINE_WARMUP and OFFLINE_REPETITIONS (default 3 and 30
#                                      timed launches, each on fresh inputs at KernelBench's own sizes).
# Everything else goes to $OUT (or ./gpu-kernelbench-out): *.log, results, report.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-kernelbench-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64
export AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache TORCH_EXTENSIONS_DIR=/tmp/torch-extensions
export AK_REFERENCE_PYTHON=${AK_REFERENCE_PYTHON:-$(command -v python3)}
ak=$PWD/.gpu-bundle/autokernel
work=${KB_WORK:-/tmp/autokernel-kernelbench}
mkdir -p "$work"

# Inductor's autotuning prints a line per configuration it tries.
quiet() { grep -vE "triton_|AUTOTUNE|autotun|SingleProcess|precompil|Benchmark|^ +[0-9.]+ ms" ; }

tests() {
  timeout "${TESTS_TIMEOUT:-420}" .gpu-bundle/autokernel_tests "[gpu][reference_process],[gpu][user_type_eval]" -d yes 2>&1 |
    quiet > "$out/tests.log"
  echo "tests exit ${PIPESTATUS[0]}"
  grep -E "FAILED|passed|failed|ratio|test cases|assertions" "$out/tests.log" | tail -20
}

# Starts the scripted server on $1 with the rest as its options; stopped by stop_server.
# Its log is $server_log, else $out/llm-server.log.
start_server() {
  python3 tests/fixtures/scripted-llm-server.py "$@" 2>> "${server_log:-$out/llm-server.log}" &
  server=$!
  sleep 1
}
stop_server() { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }

# Points a config at the scripted server on $2 and stops each kernel after $3 reverts in a row.
scripted_llm() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, port, reverts = sys.argv[1:]
text = open(path).read().replace(
    "[llm]\n", '[llm]\nprovider = "openai"\nmodel = "scripted"\nbase_url = "http://127.0.0.1:%s/v1"\nmax_retries = 1\n' % port, 1)
open(path, "w").write(text + "\n[convergence]\nmax_consecutive_reverts = %s\n" % reverts)
EOF
}

loop() {
  rm -rf "$work/kb" && mkdir -p "$work/kb"
  "$ak" kernelbench examples/kernelbench/*.py --out "$work/kb/kernelbench.toml" > "$out/kb-import.log" 2>&1
  scripted_llm "$work/kb/kernelbench.toml" 8767 4
  cp "$work/kb/kernelbench.toml" "$out/"
  start_server 8767 --kernelbench examples/kernelbench
  timeout -s TERM "${LOOP_TIMEOUT:-480}" "$ak" run --config "$work/kb/kernelbench.toml" 2>&1 | quiet > "$out/kb-run.log"
  echo "run exit ${PIPESTATUS[0]}" | tee -a "$out/kb-run.log"
  stop_server
  local run=$work/kb/runs/kernelbench
  "$ak" report --run "$run" --out "$out/kb-report" > /dev/null
  cp "$run/results.tsv" "$out/kb-results.tsv"
  tar -czf "$out/kb-run.tar.gz" -C "$work/kb" .   # the run folder, for a report by a later build
  grep -E "PASS|FAIL|ERROR|converged|reverts in a row" "$out/kb-run.log" | cut -c1-220 | tail -40
}

offer() {
  rm -rf "$work/offer" && mkdir -p "$work/offer"
  "$ak" profile --modules --warmup-s 1 --top 20 --out "$work/offer/vit.json" -- \
      python3 examples/models/vit_mlp.py --steps 500 --nvtx > "$out/offer-profile.log" 2>&1
  echo "profile exit $?"
  (cd "$work/offer" && "$ak" plan vit.json --top 20 --user-types types --write plan.toml) > "$out/offer-plan.txt" 2>&1
  echo "plan exit $?"
  cp -r "$work/offer/types" "$out/offer-types" 2>/dev/null
  # The offered user types alone, with speedups against PyTorch eager as the harness times it.
  python3 - "$work/offer/plan.toml" "$work/offer/run.toml" <<'PY'
import re, sys
blocks = [b for b in open(sys.argv[1]).read().split("[[kernel]]")[1:] if "spec =" in b]
blocks = [re.sub(r"^baseline_us = .*\n", "", b, flags=re.M) for b in blocks]
open(sys.argv[2], "w").write('[run]\nname = "offer"\nworkdir = "runs"\n\n[llm]\n' + "".join("[[kernel]]" + b for b in blocks))
PY
  scripted_llm "$work/offer/run.toml" 8769 4
  cp "$work/offer/run.toml" "$out/offer-run.toml"
  start_server 8769 --serve gelu=examples/models/kernels/gelu.cu
  timeout -s TERM 300 "$ak" run --config "$work/offer/run.toml" 2>&1 | quiet > "$out/offer-run.log"
  echo "run exit ${PIPESTATUS[0]}" | tee -a "$out/offer-run.log"
  stop_server
  "$ak" report --run "$work/offer/runs/offer" --out "$out/offer-report" > /dev/null
  tar -czf "$out/offer-run.tar.gz" -C "$work/offer" .
  grep -E "PASS|FAIL|ERROR|converged" "$out/offer-run.log" | cut -c1-220 | tail -12
}

eval_time() {
  rm -rf "$work/builtin" && mkdir -p "$work/builtin"
  cat > "$work/builtin/softmax.toml" <<'EOF'
[run]
name = "softmax"
workdir = "runs"
max_experiments = 9

[llm]

[[kernel]]
type = "softmax"
shape = [4096, 32768]
dtype = "fp32"
weight = 0.5
EOF
  scripted_llm "$work/builtin/softmax.toml" 8768 8
  start_server 8768
  timeout -s TERM 300 "$ak" run --config "$work/builtin/softmax.toml" > "$out/builtin-run.log" 2>&1
  echo "run exit $?" | tee -a "$out/builtin-run.log"
  stop_server
  cp "$work/builtin/runs/softmax/results.tsv" "$out/builtin-results.tsv"
  grep -E "PASS|FAIL|ERROR" "$out/builtin-run.log" | cut -c1-200 | tail -12
}

kb6() {
  local problems=.gpu-bundle/kb6/problems kernels=examples/kernelbench/kernels/kb6
  local dir=$work/kb6 logs=$work/kb6/logs summary=$out/summary.txt
  rm -rf "$dir" && mkdir -p "$logs"
  {
    echo "kb6 round, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1
    python3 -c "import torch; print('torch', torch.__version__)" 2>&1 | tail -1
  } > "$summary"
  local files=("$problems"/*.py)
  if [ ! -e "${files[0]}" ]; then
    echo "kb6: no problem files in $problems: copy KernelBench's six there (tests/gpu/gpu-kernelbench.sh's header)" | tee -a "$summary"
    return 2
  fi
  "$ak" kernelbench "${files[@]}" --out "$dir/kb6.toml" > "$logs/import.log" 2>&1
  local import_rc=$?
  { echo "import exit $import_rc"; cat "$logs/import.log"; } >> "$summary"
  local types=() t serve=()
  mapfile -t types < <(sed -n 's/.*: accepted ([a-z_]*) as \([a-z0-9_]*\) -> .*/\1/p' "$logs/import.log")
  for t in "${types[@]}"; do
    if [ -f "$kernels/${t#kb_}.cu" ]; then serve+=(--serve "$t=$kernels/${t#kb_}.cu")
    else echo "kb6: $t has no honest file $kernels/${t#kb_}.cu: the LLM server cannot answer it" | tee -a "$summary"; fi
  done
  if [ "$import_rc" != 0 ] || [ "${#types[@]}" != 6 ]; then
    echo "kb6: ${#types[@]} problems accepted, 6 expected: no run" | tee -a "$summary"
    tar -czf "$out/kb6.tar.gz" -C "$work" kb6
    return 1
  fi
  # The budget: the first file of each type, then edits; a slow stage at these sizes is no TIMEOUT,
  # and the baseline is PyTorch eager alone (torch.compile autotunes for minutes at these sizes).
  sed -i "s/^workdir = .*/&\nmax_experiments = ${KB6_MAX_EXPERIMENTS:-18}/" "$dir/kb6.toml"
  printf '\n[harness]\nstage_timeout_s = 300\ntorch_compile = false\n' >> "$dir/kb6.toml"
  scripted_llm "$dir/kb6.toml" 8770 2
  server_log=$logs/llm-server.log start_server 8770 "${serve[@]}"
  nvidia-smi > "$logs/nvidia-smi-before.txt" 2>&1
  python3 tests/gpu/gpu-memory-sampler.py "$logs/gpu-memory.log" --interval-s 0.5 2> "$logs/sampler.log" &
  local sampler=$!
  timeout -s TERM -k 30 "${KB6_TIMEOUT:-420}" "$ak" run --config "$dir/kb6.toml" 2>&1 |
    tee "$logs/run-raw.log" | quiet > "$logs/run.log"
  local run_rc=${PIPESTATUS[0]}
  echo "run exit $run_rc" | tee -a "$logs/run.log" >> "$summary"
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  stop_server
  nvidia-smi > "$logs/nvidia-smi-after.txt" 2>&1   # nothing of the run should hold the GPU now
  local run=$dir/runs/kb6
  "$ak" report --run "$run" --out "$logs/report" > "$logs/report.log" 2>&1
  grep -E "stopp|converged|budget|reverts in a row|HARNESS_ERROR" "$logs/run.log" | cut -c1-220 | tail -15 >> "$summary"
  echo >> "$summary"
  python3 tests/gpu/kernelbench-round-summary.py "$run" "$logs/run-raw.log" "$logs/gpu-memory.log" "${types[@]}" >> "$summary" 2>&1
  local claim=$?
  tar -czf "$out/kb6.tar.gz" -C "$work" kb6
  cat "$summary"
  return "$claim"   # 0: the claim met (tests/gpu/kernelbench-round-summary.py)
}

kinds() {
  local specs=examples/kernelbench/specs problems=("$@") p
  [ "${#problems[@]}" = 0 ] && for p in "$specs"/kb_*.toml; do p=${p##*/kb_}; problems+=("${p%.toml}"); done
  for p in "${problems[@]}"; do
    if [ ! -f "$specs/kb_$p.toml" ]; then
      echo "kinds: no spec $specs/kb_$p.toml (the problems: $(ls "$specs" | sed 's/^kb_//; s/\.toml$//' | tr '\n' ' '))" >&2
      return 2
    fi
  done
  local label
  label=$(printf '%s\n' "${problems[@]}" | md5sum | cut -c1-8)
  local dir=$work/kinds/$label
  rm -rf "$dir" && mkdir -p "$dir"
  local weight n=${#problems[@]}
  weight=$(python3 -c "print('%.4f' % (int(1e4 / $n) / 1e4))")
  {
    printf '[run]\nname = "kinds-%s"\nworkdir = "runs"\nmax_experiments = %d\n\n[llm]\n\n' "$label" $((4 * n))
    printf '[harness]\nstage_timeout_s = 120\ntorch_compile = %s\n\n' "$([ "${KINDS_TORCH_COMPILE:-1}" = 0 ] && echo false || echo true)"
    for p in "${problems[@]}"; do
      printf '[[kernel]]\nspec = "%s"\nweight = %s\n\n' "$PWD/$specs/kb_$p.toml" "$weight"
    done
  } > "$dir/kinds.toml"
  scripted_llm "$dir/kinds.toml" 8771 2
  # Neither the 2x over eager nor the peak may end a kernel before its wrong and cheating files are judged.
  printf 'target_speedup = 1000\npeak_fraction = 1.0\n' >> "$dir/kinds.toml"
  server_log=$dir/llm-server.log start_server 8771 --kernelbench examples/kernelbench
  timeout -s TERM -k 30 "${KINDS_TIMEOUT:-540}" "$ak" run --config "$dir/kinds.toml" 2>&1 | tee "$dir/run-raw.log" | quiet > "$dir/run.log"
  echo "run exit ${PIPESTATUS[0]}" | tee -a "$dir/run.log"
  stop_server
  local run=$dir/runs/kinds-$label
  "$ak" report --run "$run" > "$dir/report.log" 2>&1 || cat "$dir/report.log"
  grep -E "PASS|FAIL|ERROR|converged|reverts in a row|stopp" "$dir/run.log" | cut -c1-220 | tail -40
  tar -czf "$out/kinds-$label.tar.gz" -C "$work/kinds" "$label"
  # Every kinds run on this machine, so that calls of a few problems each add up to all eleven.
  local runs=() expect=() r
  for r in "$work"/kinds/*/runs/kinds-*; do [ -f "$r/results.tsv" ] && runs+=("$r"); done
  for r in "$specs"/kb_*.toml; do r=${r##*/}; expect+=("${r%.toml}"); done
  python3 tests/gpu/kernelbench-kinds-summary.py --expect "$(IFS=,; echo "${expect[*]}")" "${runs[@]}" > "$out/kinds-summary.txt"
  local rc=$?
  cat "$out/kinds-summary.txt"
  return "$rc"
}

# examples/models/vision_blocks.py under `profile --modules` and `plan --user-types`: which hot
# modules get a [[kernel]] entry (each layer rebuilt from its arguments and read by running its
# reference), and why the others do not.
vision() {
  rm -rf "$work/vision" && mkdir -p "$work/vision"
  "$ak" profile --modules --warmup-s 1 --top 20 --out "$work/vision/vision.json" -- \
      python3 examples/models/vision_blocks.py --steps 100 --nvtx > "$out/vision-profile.log" 2>&1
  echo "profile exit $?"
  (cd "$work/vision" && "$ak" plan vision.json --top 20 --user-types types --python python3 --write plan.toml) \
      > "$out/vision-plan.txt" 2>&1
  echo "plan exit $?"
  cp "$work/vision/plan.toml" "$out/vision-plan.toml" 2>/dev/null
  tar -czf "$out/vision.tar.gz" -C "$work/vision" .
  grep -E "^spec = |^# not offered|^weight" "$work/vision/plan.toml" | cut -c1-200
}

# One KernelBench level with no LLM, from `kernelbench --offline` to `report` (the header says what).
offline() {
  local level=${1:-}
  if [ "$level" != 1 ] && [ "$level" != 2 ]; then
    echo "offline: give the level, 1 or 2" >&2
    return 2
  fi
  local problems=${KB_LEVEL_DIR:-.gpu-bundle/kernelbench/level$level}
  local dir=$work/offline-l$level summary=$out/offline-l$level-summary.txt
  rm -rf "$dir" && mkdir -p "$dir/logs"
  local files=("$problems"/*.py)
  if [ ! -e "${files[0]}" ]; then
    echo "offline: no problem files in $problems: copy KernelBench/level$level/ there (tests/gpu/gpu-kernelbench.sh's header)" | tee "$summary"
    return 2
  fi
  {
    echo "offline level $level, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1
    python3 -c "import torch; print('torch', torch.__version__)" 2>&1 | tail -1
    echo "${#files[@]} problem files in $problems"
  } > "$summary"
  local config=$dir/l$level.toml t0 t1
  t0=$(date +%s)
  timeout -s TERM "${OFFLINE_IMPORT_TIMEOUT:-120}" "$ak" kernelbench "${files[@]}" --offline --out "$config" \
    > "$dir/logs/import.log" 2> "$dir/logs/import.err"
  local import_rc=$?
  t1=$(date +%s)
  echo "import exit $import_rc in $((t1 - t0)) s: $(tail -1 "$dir/logs/import.log")" >> "$summary"
  if grep -q "no problem accepted" "$dir/logs/import.err"; then
    # Nothing of the level runs without an LLM: every problem counts as not fast.
    {
      echo "run offline: 0 of ${#files[@]}: $(tail -1 "$dir/logs/import.err")"
      echo "fast_1 over the whole level: 0/${#files[@]} (0%) against eager and against torch.compile, under both tolerances"
    } >> "$summary"
    tar -czf "$out/offline-l$level.tar.gz" -C "$work" "offline-l$level"
    cat "$summary"
    return 0
  fi
  if [ "$import_rc" != 0 ]; then
    tail -5 "$dir/logs/import.err" >> "$summary"
    tar -czf "$out/offline-l$level.tar.gz" -C "$work" "offline-l$level"
    cat "$summary"
    return 1
  fi
  local builtin starters refused
  builtin=$(grep -c "runs as the built-in" "$dir/logs/import.log")
  starters=$(grep -c "written from its elementwise ops" "$dir/logs/import.log")
  refused=$(grep -c ": refused: " "$dir/logs/import.log")
  {
    echo "run offline: $((builtin + starters)) of ${#files[@]} ($builtin as built-in types, $starters with a first file from elementwise ops); $refused refused or needing an LLM"
    grep "runs as the built-in" "$dir/logs/import.log" | sed -E 's#^([^:]*/)?([^/:]+\.py): accepted .*runs as the built-in#  \2 ->#'
  } >> "$summary"
  # The built-in problems' PyTorch times (eager, torch.compile) come from their modules, before the
  # run so that nothing else holds the GPU while they are timed.
  t0=$(date +%s)
  timeout -s TERM "${OFFLINE_BASELINES_TIMEOUT:-100}" "$ak" kernelbench --baselines "$config" > "$dir/logs/baselines.log" 2>&1
  echo "baselines exit $? in $(( $(date +%s) - t0 )) s" >> "$summary"
  sed 's/^/  /' "$dir/logs/baselines.log" | tail -8 >> "$summary"
  # The budget: each kernel ends after OFFLINE_KERNEL_S or OFFLINE_REVERTS reverts in a row; the
  # whole run is bounded by OFFLINE_RUN_TIMEOUT. torch.compile is measured (fast_p needs it) once
  # per user type, in its first evaluation; problems that do not run are never timed.
  local kernel_h
  kernel_h=$(python3 -c "print('%.6f' % (${OFFLINE_KERNEL_S:-40} / 3600))")
  printf '\n[harness]\nstage_timeout_s = 240\ntorch_compile = true\nwarmup = %s\nrepetitions = %s\n\n[convergence]\nmax_consecutive_reverts = %s\nmax_hours_per_kernel = %s\n' \
    "${OFFLINE_WARMUP:-3}" "${OFFLINE_REPETITIONS:-30}" "${OFFLINE_REVERTS:-2}" "$kernel_h" >> "$config"
  t0=$(date +%s)
  timeout -s TERM -k 20 "${OFFLINE_RUN_TIMEOUT:-330}" "$ak" run --config "$config" 2>&1 | tee "$dir/logs/run-raw.log" | quiet > "$dir/logs/run.log"
  local run_rc=${PIPESTATUS[0]}
  echo "run exit $run_rc in $(( $(date +%s) - t0 )) s" >> "$summary"
  local run=$dir/runs/l$level
  "$ak" report --run "$run" --out "$dir/report" > "$dir/logs/report.log" 2>&1
  local report_rc=$?
  echo "report exit $report_rc" >> "$summary"
  if [ -f "$run/results.tsv" ]; then
    cut -f8 "$run/results.tsv" | tail -n +2 | sort | uniq -c | sed 's/^/  verdicts: /' >> "$summary"
  fi
  # The report's KernelBench section alone (its other tables have rows that start alike).
  local section=$dir/logs/kernelbench-section.md fast1
  sed -n '/^## KernelBench/,$p' "$dir/report/report.md" > "$section" 2>/dev/null
  # fast_p's row p = 1: eager (ours), eager (KernelBench), torch.compile (ours), torch.compile (KernelBench).
  fast1=$(grep -E '^\| 1 \|' "$section" | head -1)
  {
    echo "fast_1 over the whole level (| p | vs eager ours | vs eager KernelBench | vs compile ours | vs compile KernelBench |):"
    echo "  ${fast1:-no report}"
    grep -E '^\| 0 \|' "$section" | head -1 | sed 's/^/  fast_0: /'
    grep -E 'have no (PyTorch eager|torch.compile) time|left out as needing' "$section" | sed 's/^/  /'
    echo "per problem that ran (| problem | correct ours | correct KernelBench | best us | eager us | compile us | vs eager | vs compile |):"
    grep -E '^\| [a-z]' "$section" | grep -v "(refused: " | grep -vE '^\| (p|problem) ' | cut -c1-200
  } >> "$summary"
  cp "$dir/report/report.md" "$out/offline-l$level-report.md" 2>/dev/null
  tar -czf "$out/offline-l$level.tar.gz" -C "$work" "offline-l$level"
  cat "$summary"
  [ "$report_rc" = 0 ]   # the exit status: 1 when there is no report to read fast_p from
}

case ${1:-} in
  tests) tests ;;
  vision) vision ;;
  loop) loop ;;
  offer) offer ;;
  eval-time) eval_time ;;
  kb6) kb6; exit ;;
  kinds) shift; kinds "$@"; exit ;;
  offline) shift; offline "$@"; exit ;;
  *) echo "usage: tests/gpu/gpu-kernelbench.sh tests|loop|offer|vision|eval-time|kb6|kinds [PROBLEM...]|offline 1|2" >&2; exit 2 ;;
esac
