#!/usr/bin/env bash
# The model round, on the GPU machine, from the repository root, after tests/gpu/gpu-round.sh bundle
# on the build machine: a model from profile to verified export, the way a user would go.
#   tests/gpu/gpu-models.sh tune MODEL     profile --modules, plan, the loop on the memory-bound types
#                                        the plan ranks, export, the exported ops checked
#                                        (tests/gpu/check-exported-ops.py); in /tmp/ak-models/MODEL
#   tests/gpu/gpu-models.sh verify MODEL [ARGS]  autokernel verify of the export above (ARGS: verify's,
#                                        e.g. --compile --dtype bf16); VERIFY_LABEL=L names the
#                                        output MODEL-L-verify.*
#   tests/gpu/gpu-models.sh restore ARCHIVE  the run folders of an earlier tune round (a tar.gz of
#                                        /tmp/ak-models without pkg/), each exported again
#   tests/gpu/gpu-models.sh round MODEL...  tune, then verify --compile in fp16 and in bf16, each model
#                                        (VERIFY_ARGS: more of verify's); MODEL-runs.tar.gz for restore
#   tests/gpu/gpu-models.sh patched-profile  the transformers LLaMA profiled with its export patched in
#                                        (after tune hf_llama): where the step's time goes now
#   tests/gpu/gpu-models.sh starters       the seven row-wise starters exported as one package (from a
#                                        folder laid out as a run's) and checked the same way
#   tests/gpu/gpu-models.sh step-round [MODEL...]  (default hf_qwen3 hf_olmo2 hf_phi3) the Liger wheel of
#                                        .whl/ installed, then each model as a user goes: profile,
#                                        plan, a short builtin run, export, and verify in fp16 and bf16
#                                        with --cuda-graphs (capture() among the rows) and --liger, and
#                                        --compile in one mode (COMPILE_MODE, default: default) while
#                                        the time allows; the export's [gpu] tests last. Within
#                                        STEP_BUDGET_S (default 470 s): a model or a compile that would
#                                        not fit is skipped and said (run step-round again with the
#                                        models left). Everything in $OUT/step-round.tar.gz, the summary
#                                        table also in $OUT/step-round.txt
#   tests/gpu/gpu-models.sh gemm-round [MODEL]  (default hf_qwen3) a decoder's GEMMs tuned as a set:
#                                        profile --modules, plan, the plan's matmul entries (matmul
#                                        v2, one a Linear shape) and a fused_mlp entry of its MLP's
#                                        shape through the builtin tuner briefly, export (a file only
#                                        where it beat cuBLAS at its shape), verify in fp16 with
#                                        --cuda-graphs; within GEMM_BUDGET_S (default 285 s). The
#                                        table in $OUT/gemm-round.txt, everything in $OUT/gemm-round.tar.gz
#   tests/gpu/gpu-models.sh tc-tests       the tensor-core export's [gpu] tests: a kept matmul, fused_mlp and flash_attention
#                                        serving a small decoder, through its check script and verify;
#                                        a kept matmul and fused_mlp serving transformers' Qwen3
#                                        (examples/models/hf_qwen3.py) through verify;
#                                        $OUT/tensor-core-tests.log
#   tests/gpu/gpu-models.sh hf-kernels [MODEL]  (default hf_qwen3) the Hugging Face kernels library as a
#                                        user takes it: its wheel and kernel-abi-check's from .whl/
#                                        (huggingface_hub from .whl/hub/ only where kernels does not
#                                        import without it), a short builtin run as step-round's,
#                                        export in both layouts (hf-kernels builds its variant here),
#                                        tests/gpu/hf-kernels-check.py (get_local_kernel, opcheck of every
#                                        op, kernel-abi-check, the model kernelized eager and compiled
#                                        with a full graph against unpatched and fp32, the step of our
#                                        patch, kernelized and both compiled, interleaved in one
#                                        process), then verify --ops on the hf-kernels export and on the
#                                        torch one; within HF_BUDGET_S (default 540 s; HF_REUSE_RUN=1
#                                        exports the run of an earlier call on the same machine again
#                                        instead of tuning). Every step's exit
#                                        and the table in $OUT/hf-kernels.txt, everything in
#                                        $OUT/hf-kernels.tar.gz
# MODEL is a file of examples/models/ without .py (hf_llama, llama_block, bert_encoder). Writes
# MODEL-* to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-round-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:/usr/local/cuda/lib64
export AUTOKERNEL_CACHE_DIR=/tmp/autokernel-cache
export TORCH_EXTENSIONS_DIR=/tmp/torch-extensions
ak=$PWD/.gpu-bundle/autokernel

# The [[kernel]] entries of a plan whose type is memory-bound: those the builtin tuner brings
# past PyTorch (docs/results.md); the tensor-core types stay with cuBLAS and cuDNN.
memory_bound_entries() {
  python3 -c '
import re, sys
for block in sys.stdin.read().split("\n\n"):
    m = re.search(r"^type = \"(\w+)\"", block, re.M)
    if m and m.group(1) in ("rmsnorm", "layernorm", "softmax", "rotary_embedding", "cross_entropy", "reduce", "swiglu"):
        print(block.strip() + "\n")
'
}

tune() {
  local model=$1 work=/tmp/ak-models/$1
  rm -rf "$work" && mkdir -p "$work"
  local t0=$(date +%s)
  "$ak" profile --modules --warmup-s 1 --top 20 --out "$work/profile.json" -- \
      python3 "examples/models/$model.py" --steps 100 --nvtx > "$out/$model-profile.log" 2>&1
  echo "profile exit $? after $(( $(date +%s) - t0 )) s" >> "$out/$model-profile.log"
  cp "$work/profile.json" "$out/$model-profile.json"
  "$ak" plan "$work/profile.json" --top 20 > "$out/$model-plan.txt" 2>&1
  {
    printf '# Planned from examples/models/%s.py (autokernel plan), memory-bound types only.\n' "$model"
    printf '[run]\nname = "%s"\nworkdir = "%s/runs"\nmax_hours = %s\n\n' "$model" "$work" "${RUN_HOURS:-0.04}"
    # A GEMM at 94% of the measured peak can still be 3% behind cuBLAS: the 90% stop would end its
    # search after the first variant (it did, at each of Qwen3's shapes), so only reverts and time end it.
    printf '[llm]\nprovider = "builtin"\n\n[convergence]\ntarget_speedup = 20\npeak_fraction = 0.999\n\n'
    sed -n '/^# \[\[kernel\]\] entries planned/,$p' "$out/$model-plan.txt" | memory_bound_entries
  } > "$work/config.toml"
  cp "$work/config.toml" "$out/$model-config.toml"
  t0=$(date +%s)
  "$ak" run --config "$work/config.toml" > "$out/$model-run.log" 2>&1
  echo "run exit $? after $(( $(date +%s) - t0 )) s" >> "$out/$model-run.log"
  "$ak" status --run "$work/runs/$model" > "$out/$model-status.txt" 2>&1
  cp "$work/runs/$model/results.tsv" "$out/$model-results.tsv"
  "$ak" export --run "$work/runs/$model" --out "$work/pkg" > "$out/$model-export.log" 2>&1
  echo "export exit $?" >> "$out/$model-export.log"
  cp "$work/pkg/autokernel_ops/manifest.json" "$out/$model-manifest.json" 2>/dev/null
  [ -n "${QUICK:-}" ] && return  # the step round: verify builds and checks the ops itself
  "$ak" export --run "$work/runs/$model" --out "$work/hf" --format hf-kernels --source-only >> "$out/$model-export.log" 2>&1
  tar -czf "$out/$model-pkg.tar.gz" -C "$work" pkg hf
  t0=$(date +%s)
  PYTHONPATH=$work/pkg python3 tests/gpu/check-exported-ops.py --autokernel "$ak" --json "$out/$model-ops.json" \
      > "$out/$model-ops.log" 2>&1
  echo "ops check exit $? after $(( $(date +%s) - t0 )) s (the first import builds the extensions)" >> "$out/$model-ops.log"
}

verify() {
  local model=$1 work=/tmp/ak-models/$1 label=$1${VERIFY_LABEL:+-$VERIFY_LABEL}
  shift
  local t0=$(date +%s)
  timeout "${VERIFY_TIMEOUT_S:-0}" "$ak" verify --model "examples/models/$model.py" --ops "$work/pkg" --profile "$work/profile.json" \
      --out "$out/$label-verify.json" "$@" > "$out/$label-verify.log" 2>&1
  echo "verify exit $? after $(( $(date +%s) - t0 )) s" >> "$out/$label-verify.log"
}

# Puts back the run folders of earlier tune rounds (an archive of /tmp/ak-models made there, without
# its packages) and exports each run again with this build: the kernels of one tuning, measured by
# the op layer of another.
restore() {
  local archive=$1 model
  mkdir -p /tmp/ak-models && tar -xzf "$archive" -C /tmp/ak-models
  for model in $(ls /tmp/ak-models); do
    [ -d "/tmp/ak-models/$model/runs/$model" ] || continue
    rm -rf "/tmp/ak-models/$model/pkg"
    "$ak" export --run "/tmp/ak-models/$model/runs/$model" --out "/tmp/ak-models/$model/pkg" > "$out/$model-export.log" 2>&1
    echo "$model exported again: exit $?" >> "$out/$model-export.log"
  done
}

# The row-wise starters exported as one package, laid out as a run's kernels, and checked.
starters() {
  local work=/tmp/ak-models/starters types="rmsnorm layernorm softmax rotary_embedding cross_entropy reduce swiglu" t
  rm -rf "$work" && mkdir -p "$work/run/kernels"
  local entries=""
  for t in $types; do
    cp "kernels_cuda/$t/$t.cu" "$work/run/kernels/$t.cu"
    entries+="${entries:+,}{\"tag\": \"$t\", \"type\": \"$t\"}"
  done
  echo "{\"kernels\": [$entries]}" > "$work/run/state.json"
  "$ak" export --run "$work/run" --out "$work/pkg" > "$out/starters-export.log" 2>&1
  local t0=$(date +%s)
  PYTHONPATH=$work/pkg python3 tests/gpu/check-exported-ops.py --autokernel "$ak" --json "$out/starters-ops.json" \
      > "$out/starters-ops.log" 2>&1
  echo "ops check exit $? after $(( $(date +%s) - t0 )) s (the first import builds the extensions)" >> "$out/starters-ops.log"
}

# The transformers LLaMA profiled by module with its export (tune hf_llama) patched in.
patched_profile() {
  local work=/tmp/ak-models/hf_llama
  PYTHONPATH=$work/pkg:examples/models "$ak" profile --modules --warmup-s 1 --top 25 --out "$out/hf_llama-patched-profile.json" -- \
      python3 -c '
import runpy, sys
import transformers.models.llama.modeling_llama  # the classes the patch looks for
import autokernel_ops
print("patched:", autokernel_ops.patch().names, file=sys.stderr)
sys.argv = ["hf_llama.py", "--steps", "100"]
runpy.run_path("examples/models/hf_llama.py", run_name="__main__")
' > "$out/hf_llama-patched-profile.log" 2>&1
  echo "profile exit $?" >> "$out/hf_llama-patched-profile.log"
}

# Each model tuned, its run folders archived for a later restore, then verified in fp16 and bf16
# against every torch.compile mode it is given (VERIFY_ARGS, e.g. --compile-mode reduce-overhead).
round() {
  local model
  for model in "$@"; do
    tune "$model"
    tar -czf "$out/$model-runs.tar.gz" -C /tmp/ak-models --exclude=pkg --exclude=hf "$model"
    VERIFY_LABEL=fp16 verify "$model" --compile ${VERIFY_ARGS:-}
    VERIFY_LABEL=bf16 verify "$model" --compile --dtype bf16 ${VERIFY_ARGS:-}
  done
}

# The one command of the step round: everything under a folder of its own, packed into one archive
# after each model (only a few files come back from the GPU machine), a table printed last.
step_round() {
  local out=/tmp/ak-step-round budget=${STEP_BUDGET_S:-470} start model dtype
  rm -rf "$out" && mkdir -p "$out"
  start=$(date +%s)
  elapsed() { echo $(( $(date +%s) - start )); }
  # Liger-Kernel, pure Python and triton, travels as a wheel (nothing is downloaded there).
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      > "$out/liger-install.log" 2>&1 && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  echo "liger install exit $? ($(ls .whl 2>/dev/null | tr '\n' ' '))" >> "$out/liger-install.log"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
  # Seconds the next model's tune and uncompiled verifies take, and one compiled verify (its
  # per-op decision compiles the model once per op type the model calls, and once more): assumed
  # for the first model, then measured.
  local per_model=${STEP_MODEL_S:-200} per_compile=${STEP_COMPILE_S:-240} per_verify=60 t0 tune_s
  for model in ${@:-hf_qwen3 hf_olmo2 hf_phi3}; do
    if (( $(elapsed) + per_model > budget )); then
      echo "$model: skipped: $(elapsed) s of the $budget s budget spent, a model takes about $per_model s" >> "$out/step-round.txt"
      continue
    fi
    t0=$(date +%s)
    RUN_HOURS=${RUN_HOURS:-0.012} QUICK=1 tune "$model"
    tune_s=$(( $(date +%s) - t0 ))
    echo "$model: profiled, tuned and exported in $tune_s s" >> "$out/step-round.txt"
    for dtype in fp16 bf16; do
      local compile=() v0=$(date +%s)
      if (( $(elapsed) + per_compile <= budget )); then
        compile=(--compile --compile-mode "${COMPILE_MODE:-default}")
      else
        echo "$model $dtype: verified without --compile: $(elapsed) s of the $budget s budget spent" >> "$out/step-round.txt"
      fi
      # Never past the device's 600 s a command: what is done by then still gets packed.
      VERIFY_TIMEOUT_S=$(( budget + 100 - $(elapsed) > 30 ? budget + 100 - $(elapsed) : 30 )) VERIFY_LABEL=$dtype \
          verify "$model" --dtype "$dtype" --steps "${STEPS:-30}" --cuda-graphs --liger "${compile[@]}"
      echo "$model $dtype: verified in $(( $(date +%s) - v0 )) s${compile:+ with --compile}" >> "$out/step-round.txt"
      if (( ${#compile[@]} )); then per_compile=$(( $(date +%s) - v0 )); else per_verify=$(( $(date +%s) - v0 )); fi
    done
    # The next model: this one's tune and two uncompiled verifies (60 s each until one is measured).
    per_model=$(( tune_s + 2 * per_verify ))
    tar -czf "$OUT_DIR/step-round.tar.gz" -C /tmp ak-step-round 2>/dev/null
  done
  # The export's own GPU tests (per-shape dispatch, fp32 rotary tables, capture()), last: they
  # measure nothing, and a round short of time leaves them rather than a model. The tensor-core
  # one (three kept files through verify) is tc-tests' own.
  if (( $(elapsed) + 100 <= budget )); then
    timeout 150 .gpu-bundle/autokernel_tests "[export-ops-gpu]~[tensor-core-export]" > "$out/export-gpu-tests.log" 2>&1
    echo "export [gpu] tests exit $? after $(elapsed) s" | tee -a "$out/export-gpu-tests.log" >> "$out/step-round.txt"
  else
    echo "export [gpu] tests: skipped: $(elapsed) s of the $budget s budget spent" >> "$out/step-round.txt"
  fi
  step_summary "$out" | tee "$out/step-round-table.txt"
  cat "$out/step-round-table.txt" >> "$out/step-round.txt"
  cp "$out/step-round.txt" "$OUT_DIR/step-round.txt"
  tar -czf "$OUT_DIR/step-round.tar.gz" -C /tmp ak-step-round
}

# One line per verified model and dtype: each row's median ms, and the ratios the goals name.
step_summary() {
  python3 - "$1" <<'PY'
import glob, json, os, sys
rows = [("eager", "eager"), ("ops", "autokernel"), ("graph", "graph"), ("graph+ops", "autokernel_graph"),
        ("capture", "capture"), ("capture+ops", "autokernel_capture"), ("compile", "compile"),
        ("compile+ops", "autokernel_compile"), ("liger", "liger")]
print("model dtype " + " ".join(f"{n:>11}" for n, _ in rows) + "  ops/compile capture+ops/compile ops/liger served(min)")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*-verify.json"))):
    r = json.load(open(path))
    ms = {n: (r.get(k) or {}).get("median_ms") for n, k in rows}
    cells = " ".join(f"{ms[n]:11.3f}" if isinstance(ms[n], (int, float)) else f"{'-':>11}" for n, _ in rows)
    ratio = lambda a, b: f"{ms[a] / ms[b]:.3f}" if ms.get(a) and ms.get(b) else "-"
    served = [c["share"] for c in (r.get("served") or {}).get("calls", [])]
    name = os.path.basename(path).replace("-verify.json", "")
    print(f"{name} {cells}  {ratio('ops', 'compile'):>11} {ratio('capture+ops', 'compile'):>16} {ratio('ops', 'liger'):>9} "
          f"{min(served) if served else float('nan'):.3f}")
    for key in ("liger", "capture", "autokernel_capture"):
        if isinstance(r.get(key), dict) and "error" in r[key]:
            print(f"  {key}: {r[key]['error']}")
    # verify --profile's predictions beside the measured speedup (the goal: within 5%).
    v, p = r.get("verdict") or {}, (r.get("verdict") or {}).get("prediction") or {}
    if "predicted_speedup" in v and v.get("speedup"):
        whole = v.get("predicted_speedup_whole_step")
        line = f"  speedup {v['speedup']:.3f}x measured; predicted {v['predicted_speedup']:.3f}x from kernel time"
        if p.get("whole_step") and whole:
            line += (f", {whole:.3f}x as a whole step ({whole / v['speedup']:.3f} of measured; {p['before']['bound']}-bound "
                     f"before, {p['after']['bound']}-bound after; GPU -{p['gpu_removed_us']:.0f} us, CPU -{p['cpu_removed_us']:.0f} us)")
        else:
            line += f"; whole step: {p.get('why_kernel_time_only', 'not predicted')}"
        print(line)
PY
}

# The [[kernel]] entries of a plan for a decoder's GEMMs: its matmul entries (one a Linear shape,
# contract version 2) and one fused_mlp entry for its gated MLP, made from the gate/up and down
# shapes ([M, I, K] and [M, K, I], I > K) with their GEMMs' time as its baseline (cuBLAS's three
# GEMMs as the model runs them, the product between them not counted: a conservative baseline).
gemm_entries() {
  python3 -c '
import re, sys
# Each entry: a [[kernel]] line and the key = value lines after it (the plan writes a GEMM group
# entry after entry, without blank lines between them).
entries, current = [], None
for line in sys.stdin.read().splitlines():
    if line.strip() == "[[kernel]]":
        current = [line]
        entries.append(current)
    elif current is not None and re.match(r"^\w+ = ", line):
        current.append(line)
    else:
        current = None
gemms = {}
for entry in entries:
    text = "\n".join(entry)
    if not re.search(r"^type = \"matmul\"", text, re.M):
        continue
    print(text + "\n")
    shape = re.search(r"^shape = \[([0-9, ]+)\]", text, re.M)
    base = re.search(r"^baseline_us = ([0-9.]+)", text, re.M)
    weight = re.search(r"^weight = ([0-9.]+)", text, re.M)
    dtype = re.search(r"^dtype = \"(\w+)\"", text, re.M)
    if shape and base and weight:
        m, n, k, b = (int(v) for v in shape.group(1).split(","))
        gemms[(m, n, k, b)] = (float(base.group(1)), float(weight.group(1)), dtype.group(1) if dtype else "fp16")
for (m, i, k, b), (up_us, up_w, dtype) in sorted(gemms.items()):
    down = gemms.get((m, k, i, 0))
    if b == 0 and i > k and down:
        print(f"[[kernel]]\ntype = \"fused_mlp\"\nshape = [{m}, {k}, {i}]    # M, K, I: the gated MLP of the plan above\n"
              f"dtype = \"{dtype}\"\nweight = {up_w + down[1]:.4f}\n"
              f"baseline_us = {2 * up_us + down[0]:.2f}    # gate, up and down GEMMs per call, in the profile\n")
        break
'
}

gemm_round() {
  local model=${1:-hf_qwen3} work=/tmp/ak-gemm/${1:-hf_qwen3} log=/tmp/ak-gemm-round budget=${GEMM_BUDGET_S:-285} start t0
  rm -rf "$work" "$log" && mkdir -p "$work" "$log"
  start=$(date +%s)
  elapsed() { echo $(( $(date +%s) - start )); }
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv > "$log/gpu.txt" 2>&1
  "$ak" profile --modules --warmup-s 1 --top 20 --out "$work/profile.json" -- \
      python3 "examples/models/$model.py" --steps 20 --nvtx > "$log/$model-profile.log" 2>&1
  echo "$model: profile exit $? after $(elapsed) s" >> "$log/gemm-round.txt"
  "$ak" plan "$work/profile.json" --top 30 > "$log/$model-plan.txt" 2>&1
  # What is left of the budget after the export and the verify (about 110 s with the first build
  # of the extensions) goes to the run, at least 30 s.
  local run_s=$(( budget - $(elapsed) - 110 ))
  (( run_s < 30 )) && run_s=30
  {
    printf '# Planned from examples/models/%s.py (autokernel plan): its GEMMs and its MLP.\n' "$model"
    printf '[run]\nname = "%s"\nworkdir = "%s/runs"\nmax_hours = %s\n\n' "$model" "$work" "$(python3 -c "print(round($run_s / 3600, 4))")"
    # A GEMM at 94% of the measured peak can still be 3% behind cuBLAS: the 90% stop would end its
    # search after the first variant (it did, at each of Qwen3's shapes), so only reverts and time end it.
    printf '[llm]\nprovider = "builtin"\n\n[convergence]\ntarget_speedup = 20\npeak_fraction = 0.999\n\n'
    sed -n '/^# \[\[kernel\]\] entries planned/,$p' "$log/$model-plan.txt" | gemm_entries
  } > "$work/config.toml"
  cp "$work/config.toml" "$log/$model-config.toml"
  echo "$model: $(grep -c '^type = "matmul"' "$work/config.toml") GEMM shapes and $(grep -c '^type = "fused_mlp"' "$work/config.toml") MLP planned; the run gets $run_s s" >> "$log/gemm-round.txt"
  t0=$(date +%s)
  "$ak" run --config "$work/config.toml" > "$log/$model-run.log" 2>&1
  echo "$model: run exit $? after $(( $(date +%s) - t0 )) s" >> "$log/gemm-round.txt"
  "$ak" status --run "$work/runs/$model" > "$log/$model-status.txt" 2>&1
  cp "$work/runs/$model/results.tsv" "$log/$model-results.tsv" 2>/dev/null
  cp "$work/runs/$model/state.json" "$log/$model-state.json" 2>/dev/null
  "$ak" export --run "$work/runs/$model" --out "$work/pkg" > "$log/$model-export.log" 2>&1
  local exported=$?
  echo "$model: export exit $exported" >> "$log/gemm-round.txt"
  grep -E "left out|from " "$log/$model-export.log" | sed 's/^/  /' >> "$log/gemm-round.txt"
  if (( exported == 0 )); then
    cp "$work/pkg/autokernel_ops/manifest.json" "$log/$model-manifest.json"
    t0=$(date +%s)
    timeout $(( budget + 60 - $(elapsed) > 30 ? budget + 60 - $(elapsed) : 30 )) "$ak" verify --model "examples/models/$model.py" \
        --ops "$work/pkg" --profile "$work/profile.json" --steps "${STEPS:-12}" --cuda-graphs \
        --out "$log/$model-fp16-verify.json" > "$log/$model-fp16-verify.log" 2>&1
    echo "$model: verify exit $? after $(( $(date +%s) - t0 )) s" >> "$log/gemm-round.txt"
    python3 - "$log/$model-fp16-verify.json" >> "$log/gemm-round.txt" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in (r.get("served") or {}).get("calls", []):
    print(f"  served {c['name']} ({c['type']}): {c['served']} of {c['calls']} calls, PyTorch's op in C++ for "
          f"{c['op_fell_back']}, declined {c['declined']}, by file {c['files']}")
PY
  else
    echo "$model: nothing exported, nothing to verify (export's reasons above)" >> "$log/gemm-round.txt"
  fi
  step_summary "$log" >> "$log/gemm-round.txt"
  echo "gemm round: $(elapsed) s" >> "$log/gemm-round.txt"
  cp "$log/gemm-round.txt" "$OUT_DIR/gemm-round.txt"
  tar -czf "$OUT_DIR/gemm-round.tar.gz" -C /tmp ak-gemm-round
  cat "$log/gemm-round.txt"
}

# The hf-kernels export as a user of the kernels library takes it: one command, each step's exit
# said (a failed step does not stop the next), packed after each step.
hf_kernels() {
  local model=${1:-hf_qwen3} out=/tmp/ak-hf-kernels budget=${HF_BUDGET_S:-540} start t0 rc layout
  local work=/tmp/ak-models/${1:-hf_qwen3} site=/tmp/site-hf
  rm -rf "$out" "$site" && mkdir -p "$out"
  start=$(date +%s)
  elapsed() { echo $(( $(date +%s) - start )); }
  left() { local l=$(( budget - $(elapsed) )); echo $(( l > 20 ? l : 20 )); }
  say() { echo "$*" | tee -a "$out/hf-kernels.txt"; }
  pack() { cp "$out/hf-kernels.txt" "$OUT_DIR/hf-kernels.txt"; tar -czf "$OUT_DIR/hf-kernels.tar.gz" -C /tmp ak-hf-kernels 2>/dev/null; }
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl/kernels-*.whl \
      .whl/kernel_abi_check-*.whl > "$out/install.log" 2>&1
  say "kernels and kernel-abi-check wheels: install exit $? ($(cd .whl && ls kernels-*.whl kernel_abi_check-*.whl 2>&1 | tr '\n' ' '))"
  export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PATH=$site/bin:$PATH
  if ! python3 -c 'from kernels import get_local_kernel, kernelize' >> "$out/install.log" 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl/hub/*.whl >> "$out/install.log" 2>&1
    say "kernels did not import with this machine's huggingface_hub: $(cd .whl/hub 2>/dev/null && ls *.whl) installed beside it, exit $?"
  fi
  python3 -c 'import kernels, huggingface_hub, torch, transformers, sys
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}, "
      f"kernels {kernels.__version__}, huggingface_hub {huggingface_hub.__version__}")' 2>&1 | tail -1 | tee -a "$out/hf-kernels.txt"
  t0=$(date +%s)
  if [ -n "${HF_REUSE_RUN:-}" ] && [ -d "$work/runs/$model" ]; then
    # A second call on the same machine: the run of the first, exported again.
    rm -rf "$work/pkg" "$work/hf"
    "$ak" export --run "$work/runs/$model" --out "$work/pkg" > "$out/$model-export.log" 2>&1
    echo "export exit $?" >> "$out/$model-export.log"
    say "$model: the earlier run in $work reused (HF_REUSE_RUN), exported again: $(tail -1 "$out/$model-export.log")"
  else
    RUN_HOURS=${RUN_HOURS:-0.008} QUICK=1 tune "$model"
    say "$model: profile, plan, builtin run and export --format torch in $(( $(date +%s) - t0 )) s: $(tail -1 "$out/$model-run.log"); $(tail -1 "$out/$model-export.log")"
  fi
  grep -E "left out|from " "$out/$model-export.log" | sed 's/^/  /' | tee -a "$out/hf-kernels.txt"
  t0=$(date +%s)
  "$ak" export --run "$work/runs/$model" --out "$work/hf" --format hf-kernels --force > "$out/$model-export-hf.log" 2>&1
  rc=$?
  say "export --format hf-kernels exit $rc in $(( $(date +%s) - t0 )) s: $(ls "$work/hf/build" 2>&1 | tr '\n' ' ')"
  (( rc != 0 )) && tail -12 "$out/$model-export-hf.log" | sed 's/^/  | /' | tee -a "$out/hf-kernels.txt"
  cp "$work"/hf/build/*/metadata.json "$out/$model-hf-metadata.json" 2>/dev/null
  pack
  t0=$(date +%s)
  timeout "$(left)" python3 tests/gpu/hf-kernels-check.py --hf "$work/hf" --torch-pkg "$work/pkg" --model "examples/models/$model.py" \
      --dtype "${DTYPE:-fp16}" --steps "${STEPS:-10}" --json "$out/$model-hf-check.json" > "$out/$model-hf-check.log" 2>&1
  rc=$?
  say "hf-kernels-check exit $rc after $(( $(date +%s) - t0 )) s$( (( rc == 124 )) && echo ': timed out')"
  grep -E "^(FAIL|NOTE)|^get_local_kernel|^kernelize|^layer names|max error" "$out/$model-hf-check.log" | tee -a "$out/hf-kernels.txt"
  sed -n '/^step  /,$p' "$out/$model-hf-check.log" | tee -a "$out/hf-kernels.txt"
  (( rc != 0 && rc != 1 )) && tail -25 "$out/$model-hf-check.log" | sed 's/^/  | /' | tee -a "$out/hf-kernels.txt"
  pack
  for layout in hf pkg; do
    if (( $(elapsed) + 60 > budget )); then say "verify --ops $layout: skipped: $(elapsed) s of the $budget s budget spent"; continue; fi
    t0=$(date +%s)
    timeout "$(left)" "$ak" verify --model "examples/models/$model.py" --ops "$work/$layout" --steps "${STEPS:-10}" \
        --out "$out/$model-$layout-verify.json" > "$out/$model-$layout-verify.log" 2>&1
    say "verify --ops $work/$layout exit $? after $(( $(date +%s) - t0 )) s"
    grep -E "speedup|agree|disagree|error" "$out/$model-$layout-verify.log" | head -8 | sed 's/^/  /' | tee -a "$out/hf-kernels.txt"
    pack
  done
  say "hf-kernels: $(elapsed) s"
  pack
}

# The tensor-core export's [gpu] tests alone.
tc_tests() {
  timeout 540 .gpu-bundle/autokernel_tests "[tensor-core-export]" > "$out/tensor-core-tests.log" 2>&1
  echo "tensor-core export [gpu] tests exit $?" | tee -a "$out/tensor-core-tests.log"
  tail -40 "$out/tensor-core-tests.log"
}

case ${1:-} in
  starters) starters ;;
  patched-profile) patched_profile ;;
  tune) tune "${2:?model}" ;;
  verify) verify "${2:?model}" "${@:3}" ;;
  restore) restore "${2:?archive of /tmp/ak-models}" ;;
  round) round "${@:2}" ;;
  step-round) OUT_DIR=$out step_round "${@:2}" ;;
  gemm-round) OUT_DIR=$out gemm_round "${@:2}" ;;
  tc-tests) tc_tests ;;
  hf-kernels) OUT_DIR=$out hf_kernels "${@:2}" ;;
  *) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 2 ;;
esac
