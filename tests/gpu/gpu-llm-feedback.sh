#!/usr/bin/env bash
# The LLM path on the GPU machine, end to end: `autokernel run` on the built-in rmsnorm (the real
# harness) against tests/fixtures/scripted-llm-server.py --needs-feedback, a model that writes a fix only
# when the prompt shows it the failed file as a diff and the compiler's log. Expected: the first
# edit (a real gain with a typo) is a COMPILE_ERROR that spends no revert, the next one keeps the
# gain; then `propose --run` prints the prompt the daemon would send next. From the repository
# root, with .gpu-bundle/ beside it; writes $OUT/llm-feedback.txt.
set -uo pipefail
out=${OUT:-$PWD/gpu-llm-out}
mkdir -p "$out"
ak=$PWD/.gpu-bundle/autokernel
work=$(mktemp -d /tmp/ak-llm-feedback.XXXX)
python3 tests/fixtures/scripted-llm-server.py 8781 --needs-feedback > "$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
sleep 1
cat > "$work/run.toml" <<TOML
[run]
name = "feedback"
workdir = "$work/runs"
max_experiments = 4

[llm]
provider = "openai"
model = "scripted"
base_url = "http://127.0.0.1:8781/v1"
max_retries = 1

[[kernel]]
type = "rmsnorm"
shape = [4096, 4096]
dtype = "fp16"
TOML
{
  timeout -s TERM 300 "$ak" run --config "$work/run.toml" > "$work/run.log" 2>&1
  echo "run exit $?"
  echo "## results.tsv (experiment, correctness, latency_us, kept, predicted_us, description)"
  python3 - "$work/runs/feedback/results.tsv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for r in rows:
    print("\t".join(r.get(k, "") for k in ("experiment", "correctness", "latency_us", "kept", "predicted_us", "description")))
PY
  echo "## the next prompt (propose --run)"
  "$ak" propose --config "$work/run.toml" --run "$work/runs/feedback" --kernel rmsnorm 2>&1 | head -c 20000
} > "$out/llm-feedback.txt" 2>&1
tar -czf "$out/llm-feedback-run.tar.gz" -C "$work" . 2>/dev/null
sed -n 1,12p "$out/llm-feedback.txt"
