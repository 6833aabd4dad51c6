#!/usr/bin/env bash
# Whether this machine's driver lets a user who is not root read the GPU's performance counters:
# `autokernel bench --counters` on rmsnorm's starter as root, then as an unprivileged user (uid
# 65534 through setpriv, else nobody through runuser), each with a writable cache folder and HOME
# of its own, and what each verdict says about counters. A refused verdict must still pass and
# name the driver option (docs/operations.md, "Hardware counters").
#   tests/gpu/gpu-round.sh bundle              on the build machine: .gpu-bundle/
#   tests/gpu/counters-user.sh [OUT_DIR]       on the GPU machine, from the repository root, as root
#                                              (OUT_DIR: default $OUT, else ./gpu-round-out)
# Writes OUT_DIR/counters-user/{root,user}.{txt,json,log} and prints a summary; exit 0 when both
# benches gave a passing verdict whose counters are readings or a reason, 1 otherwise, 2 when it
# cannot run (no bundle, not root, no way to change user).
set -uo pipefail
cd "$(dirname "$0")/../.."

out=${1:-${OUT:-$PWD/gpu-round-out}}/counters-user
mkdir -p "$out"
bundle=$PWD/.gpu-bundle
[ -x "$bundle/autokernel" ] || { echo "counters-user.sh: no $bundle/autokernel: run tests/gpu/gpu-round.sh bundle first" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "counters-user.sh: run as root: it benches as root and then as another user" >&2; exit 2; }

# as_user COMMAND...: COMMAND as uid/gid 65534 with no supplementary groups and a clean environment.
if command -v setpriv > /dev/null; then
  as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  how="setpriv --reuid=65534 --regid=65534 --clear-groups"
elif command -v runuser > /dev/null && getent passwd nobody > /dev/null; then
  as_user() { runuser -u nobody -- "$@"; }
  how="runuser -u nobody"
else
  echo "counters-user.sh: neither setpriv nor runuser (with a user nobody) is here: cannot run as another user" >&2
  exit 2
fi

# Both users run the same copy, in a folder any user can read and search (the repository may be
# under a home only root can enter) on a file system that lets it execute (a /tmp mounted noexec
# would not); each gets its own HOME and cache, so that the unprivileged one measures its peaks
# itself rather than read root's.
shared=
for base in /tmp /var/tmp /dev/shm "$PWD"; do
  d=$(mktemp -d "$base/ak-counters-user.XXXXXX" 2>/dev/null) || continue
  cp -a "$bundle" "$d/bundle" && chmod -R a+rX "$d" && chmod a+x "$d"
  if as_user env LD_LIBRARY_PATH="$d/bundle/lib:/usr/local/cuda/lib64" "$d/bundle/autokernel" --version > /dev/null 2>&1; then
    shared=$d
    break
  fi
  echo "counters-user.sh: $base does not let uid 65534 run the bundle: trying the next folder"
  rm -rf "$d"
done
[ -n "$shared" ] || { echo "counters-user.sh: no folder lets uid 65534 run a copy of the bundle" >&2; exit 2; }
trap 'rm -rf "$shared"' EXIT
cp kernels_cuda/rmsnorm/rmsnorm.cu "$shared/rmsnorm.cu"
chmod a+r "$shared/rmsnorm.cu"
for who in root user; do mkdir -p "$shared/home-$who/cache"; done
chown -R 65534:65534 "$shared/home-user"
ak=$shared/bundle/autokernel
echo "the bundle's copy: $shared"

echo "== the driver and this process"
nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv,noheader 2>&1 | head -4
grep -H RmProfilingAdminOnly /proc/driver/nvidia/params 2>/dev/null || echo "RmProfilingAdminOnly: not readable here (/proc/driver/nvidia/params)"
grep -H NVreg_RestrictProfilingToAdminUsers /etc/modprobe.d/*.conf 2>/dev/null || echo "no NVreg_RestrictProfilingToAdminUsers in /etc/modprobe.d"
capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
# CAP_SYS_ADMIN is capability 21: the driver's test of an administrator.
if (( (16#$capeff >> 21) & 1 )); then echo "root's CapEff $capeff: has CAP_SYS_ADMIN"; else echo "root's CapEff $capeff: no CAP_SYS_ADMIN"; fi
ls -l /dev/nvidia* 2>&1 | head -8

# bench WHO: the starter benched twice by WHO (root or user), once as text with --counters, once
# as JSON, in an environment like the worker's: only what bench needs.
bench() {
  local who=$1 run=()
  [ "$who" = user ] && run=(as_user)
  local envs=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$shared/home-$who" TMPDIR="$shared/home-$who"
              LD_LIBRARY_PATH="$shared/bundle/lib:/usr/local/cuda/lib64" AUTOKERNEL_CACHE_DIR="$shared/home-$who/cache")
  [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && envs+=(CUDA_VISIBLE_DEVICES="$CUDA_VISIBLE_DEVICES")
  "${run[@]}" "${envs[@]}" id > "$out/$who.log" 2>&1
  "${run[@]}" "${envs[@]}" "$ak" bench "$shared/rmsnorm.cu" --kernel rmsnorm --counters > "$out/$who.txt" 2>> "$out/$who.log"
  echo "bench --counters exit $?" >> "$out/$who.log"
  "${run[@]}" "${envs[@]}" "$ak" bench "$shared/rmsnorm.cu" --kernel rmsnorm --json > "$out/$who.json" 2>> "$out/$who.log"
  echo "bench --json exit $?" >> "$out/$who.log"
}

status=0
for who in root user; do
  echo
  if [ "$who" = root ]; then echo "== as root"; else echo "== as an unprivileged user ($how)"; fi
  bench "$who"
  head -1 "$out/$who.log"
  grep -E "^result:|^  (latency|limits|counters) " "$out/$who.txt" || { echo "no verdict; bench said:"; tail -5 "$out/$who.log"; }
  python3 - "$out/$who.json" "$who" <<'PY' || status=1
import json, sys
path, who = sys.argv[1], sys.argv[2]
verdicts = [json.loads(l) for l in open(path) if l.strip().startswith("{")]
if not verdicts:
    print(f"{who}: no verdict in {path}")
    sys.exit(1)
v = verdicts[-1]
c = v.get("counters")
passed = v.get("correctness") == "PASS"
if c is None:
    print(f"{who}: {v.get('correctness')}; the verdict has no counters field")
    sys.exit(1)
if c.get("unavailable"):
    refused = "INSUFFICIENT_PRIVILEGES" in c["unavailable"]
    print(f"{who}: {v.get('correctness')}; counters refused{' (privileges)' if refused else ''}: {c['unavailable']}")
    sys.exit(0 if passed else 1)
print(f"{who}: {v.get('correctness')}; counters read in {c.get('passes')} passes: DRAM {c.get('dram_pct')}% of peak, "
      f"SM {c.get('sm_pct')}%, achieved occupancy {c.get('achieved_occupancy_pct')}%")
sys.exit(0 if passed else 1)
PY
done
echo
echo "files: $out"
exit $status
