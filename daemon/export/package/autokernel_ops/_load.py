"""Builds each exported kernel into a small PyTorch extension of its own, at first import, with
PyTorch's extension tooling (torch.utils.cpp_extension.load): compiled by nvcc for this GPU, cached
under TORCH_EXTENSIONS_DIR (~/.cache/torch_extensions) by a name that holds the sources' hash, so
a later import loads it in a moment and a changed kernel file is rebuilt.

One extension per kernel: each kernel file is an independent candidate, and a file that fails to
build leaves the others working (its op then is absent and nothing is patched for it, said once)."""
import hashlib
import json
import os
import sys

import torch
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
# cpp_extension defines these to keep PyTorch's own half operators apart; a kernel file is written
# for NVRTC, where CUDA's half operators are available, so the launchers undefine them.
_HALF_FLAGS = ["-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
               "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__"]


def manifest():
    with open(os.path.join(HERE, "manifest.json")) as f:
        return json.load(f)


def _arch():
    """The harness's NVRTC target for this GPU: sm_90a on Hopper (wgmma), sm_XY elsewhere."""
    major, minor = torch.cuda.get_device_capability()
    return f"{major}{minor}" + ("a" if major == 9 else "")


def _sources(type_):
    csrc = os.path.join(HERE, "csrc")
    return [os.path.join(csrc, f"{type_}_launch.cu"), os.path.join(csrc, f"{type_}_symbols.cpp"),
            os.path.join(csrc, f"{type_}.cpp")]


def _digest(type_, arch):
    h = hashlib.sha256(arch.encode() + torch.__version__.encode())
    for path in _sources(type_) + [os.path.join(HERE, "kernels", f"{type_}.cu")] + \
            [os.path.join(HERE, "csrc", f) for f in ("common.h", "launch.h", "grid_rules.h")]:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def load(types, verbose=False):
    """Builds or loads each type's extension; returns (loaded types, {type: why not})."""
    if not torch.cuda.is_available():
        return [], {t: "no CUDA device" for t in types}
    arch = _arch()
    loaded, failed = [], {}
    for t in types:
        try:
            cpp_extension.load(
                name=f"autokernel_{t}_{_digest(t, arch)}", sources=_sources(t),
                extra_cflags=["-O3", "-std=c++17"],
                extra_cuda_cflags=["-O3", "-std=c++17", f"-gencode=arch=compute_{arch},code=sm_{arch}"] + _HALF_FLAGS,
                extra_include_paths=[os.path.join(HERE, "csrc")],
                is_python_module=False, verbose=verbose)
            loaded.append(t)
        except Exception as e:  # the op stays absent; nothing is patched for it
            failed[t] = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            print(f"autokernel_ops: {t} was not built: {failed[t]} (set AUTOKERNEL_OPS_VERBOSE=1 for the compiler's "
                  "output)", file=sys.stderr)
    return loaded, failed
