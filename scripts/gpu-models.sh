#!/usr/bin/env bash
# The model round, on the GPU machine, from the repository root, after scripts/gpu-round.sh bundle
# on the build machine: a model from profile to verified export, the way a user would go.
#   scripts/gpu-models.sh tune MODEL     profile --modules, plan, the loop on the memory-bound types
#                                        the plan ranks, export, the exported ops checked
#                                        (scripts/check-exported-ops.py); in /tmp/ak-models/MODEL
#   scripts/gpu-models.sh verify MODEL [ARGS]  autokernel verify of the export above (ARGS: verify's,
#                                        e.g. --compile --dtype bf16); VERIFY_LABEL=L names the
#                                        output MODEL-L-verify.*
#   scripts/gpu-models.sh restore ARCHIVE  the run folders of an earlier tune round (a tar.gz of
#                                        /tmp/ak-models without pkg/), each exported again
#   scripts/gpu-models.sh round MODEL...  tune, then verify --compile in fp16 and in bf16, each model
#                                        (VERIFY_ARGS: more of verify's); MODEL-runs.tar.gz for restore
#   scripts/gpu-models.sh patched-profile  the transformers LLaMA profiled with its export patched in
#                                        (after tune hf_llama): where the step's time goes now
#   scripts/gpu-models.sh starters       the seven row-wise starters exported as one package (from a
#                                        folder laid out as a run's) and checked the same way
# MODEL is a file of examples/models/ without .py (hf_llama, llama_block, bert_encoder). Writes
# MODEL-* to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
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
    printf '[run]\nname = "%s"\nworkdir = "%s/runs"\nmax_hours = 0.04\n\n' "$model" "$work"
    printf '[llm]\nprovider = "builtin"\n\n[convergence]\ntarget_speedup = 20\n\n'
    sed -n '/^# \[\[kernel\]\] entries planned/,$p' "$out/$model-plan.txt" | memory_bound_entries
  } > "$work/config.toml"
  cp "$work/config.toml" "$out/$model-config.toml"
  t0=$(date +%s)
  "$ak" run --config "$work/config.toml" > "$out/$model-run.log" 2>&1
  echo "run exit $? after $(( $(date +%s) - t0 )) s" >> "$out/$model-run.log"
  "$ak" status --run "$work/runs/$model" > "$out/$model-status.txt" 2>&1
  cp "$work/runs/$model/results.tsv" "$out/$model-results.tsv"
  "$ak" export --run "$work/runs/$model" --out "$work/pkg" > "$out/$model-export.log" 2>&1
  "$ak" export --run "$work/runs/$model" --out "$work/hf" --format hf-kernels >> "$out/$model-export.log" 2>&1
  tar -czf "$out/$model-pkg.tar.gz" -C "$work" pkg hf
  t0=$(date +%s)
  PYTHONPATH=$work/pkg python3 scripts/check-exported-ops.py --autokernel "$ak" --json "$out/$model-ops.json" \
      > "$out/$model-ops.log" 2>&1
  echo "ops check exit $? after $(( $(date +%s) - t0 )) s (the first import builds the extensions)" >> "$out/$model-ops.log"
}

verify() {
  local model=$1 work=/tmp/ak-models/$1 label=$1${VERIFY_LABEL:+-$VERIFY_LABEL}
  shift
  local t0=$(date +%s)
  "$ak" verify --model "examples/models/$model.py" --ops "$work/pkg" --profile "$work/profile.json" \
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
  PYTHONPATH=$work/pkg python3 scripts/check-exported-ops.py --autokernel "$ak" --json "$out/starters-ops.json" \
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

case ${1:-} in
  starters) starters ;;
  patched-profile) patched_profile ;;
  tune) tune "${2:?model}" ;;
  verify) verify "${2:?model}" "${@:3}" ;;
  restore) restore "${2:?archive of /tmp/ak-models}" ;;
  round) round "${@:2}" ;;
  *) sed -n '2,19p' "$0"; exit 2 ;;
esac
