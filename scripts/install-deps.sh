#!/usr/bin/env bash
# Installs what autokernel needs to build and test on Debian 12 / Ubuntu 22.04+, with apt.
# CUDA itself comes from the machine's toolkit (/usr/local/cuda, or CUDA_HOME): NVRTC, CUPTI and
# headers; this script checks it is there and says what to do if not.
set -euo pipefail

packages=(
  cmake g++ make pkg-config git
  libcurl4-openssl-dev nlohmann-json3-dev libspdlog-dev libgit2-dev catch2 libtomlplusplus-dev
  systemd   # systemd-analyze, to check config/autokernel.service in the tests
  python3   # the tests of the Python autokernel writes out (profile --modules, export)
)

if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (or install sudo)" >&2; exit 2; }
  exec sudo -E bash "$0" "$@"
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"

cuda=${CUDA_HOME:-/usr/local/cuda}
missing=()
[[ -f $cuda/include/nvrtc.h ]] || missing+=("NVRTC headers ($cuda/include/nvrtc.h)")
[[ -f $cuda/include/cupti.h || -f $cuda/extras/CUPTI/include/cupti.h ]] || missing+=("CUPTI headers")
ls "$cuda"/lib64/libnvrtc.so* >/dev/null 2>&1 || ls "$cuda"/lib/libnvrtc.so* >/dev/null 2>&1 || missing+=("libnvrtc")
if (( ${#missing[@]} )); then
  echo "install-deps: the CUDA toolkit at $cuda lacks: ${missing[*]}." >&2
  echo "Install the CUDA Toolkit 13 from NVIDIA (it provides NVRTC and CUPTI), or set CUDA_HOME." >&2
  exit 1
fi
echo "install-deps: ready ($(grep -h -m1 -o 'CUDA_VERSION [0-9]*' "$cuda/include/cuda.h" || echo "CUDA at $cuda"))"
