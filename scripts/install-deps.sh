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
  python3-pip python3-venv   # torch, below
)

if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (or install sudo)" >&2; exit 2; }
  exec sudo -E bash "$0" "$@"
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${packages[@]}"

# PyTorch: `autokernel kernelbench` runs each problem with it (on its meta device), and the reference
# process's tests run on the CPU with it. From PyPI where python3 has none: the default wheel,
# which brings CUDA's libraries (a few GB; minutes on a fast link).
if ! python3 -c 'import torch' >/dev/null 2>&1; then
  echo "install-deps: python3 has no torch: installing it from PyPI (pip install torch)"
  started=$SECONDS
  python3 -m pip install --quiet torch 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages torch   # Debian 12's python3 is externally managed
  echo "install-deps: torch $(python3 -c 'import torch; print(torch.__version__)') installed in $((SECONDS - started)) s"
fi

# The Hugging Face `kernels` library, pinned, in a virtual environment that also sees the system's
# PyTorch: tests/daemon/export/hf_kernels_test.py checks the hf-kernels export against it. Its import
# needs no torch (only huggingface_hub, packaging, pyyaml); resolving a variant asks torch for its
# version. CMake finds it at AK_KERNELS_PYTHON (default below).
kernels_venv=${AK_KERNELS_VENV:-/opt/autokernel/kernels-venv}
if ! "$kernels_venv/bin/python" -c 'import kernels; assert kernels.__version__ == "0.17.2"' >/dev/null 2>&1; then
  echo "install-deps: the kernels library 0.17.2 into $kernels_venv"
  python3 -m venv --system-site-packages "$kernels_venv"
  "$kernels_venv/bin/pip" install --quiet 'kernels==0.17.2'
fi

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
