"""Builds each exported kernel's op into a small PyTorch extension of its own, at first import, with
PyTorch's extension tooling (torch.utils.cpp_extension.load), cached under TORCH_EXTENSIONS_DIR
(~/.cache/torch_extensions) by a name that holds the sources' hash, so a later import loads it in a
moment.

What is compiled here is autokernel's own host C++ only: the op (csrc/<type>.cpp) and its launcher
(csrc/<type>_launch.cpp), which hands the module NVRTC compiled at export (csrc/<type>_module.h, a
byte array) to the CUDA driver at import (_modules.py). No kernel source is in the package, so nothing a
kernel file holds can run on this machine's CPU, and no nvcc is needed.

One extension per kernel: a kernel that cannot run here (no module for this GPU, a build that
fails) leaves the others working (its op then is absent and nothing is patched for it, said once)."""
import hashlib
import json
import os
import sys

import torch
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
# The launcher opens the CUDA driver (libcuda.so.1) with dlopen, as autokernel's harness does, so
# it links no libcuda and no stub library; -ldl for a C library older than glibc 2.34.
_LDFLAGS = ["-ldl"]


def manifest():
    with open(os.path.join(HERE, "manifest.json")) as f:
        return json.load(f)


def _arch():
    """The harness's NVRTC target for this GPU: sm_90a on Hopper (wgmma), sm_XY elsewhere."""
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}" + ("a" if major == 9 else "")


def runs_on(module_arch, device_arch):
    """Whether a cubin for module_arch runs on a GPU the harness would compile device_arch for: the
    same architecture, or (not for an 'a' architecture, which is for its own GPU only) one of the
    same major version and a lower minor one."""
    if module_arch == device_arch:
        return True
    if module_arch.endswith("a"):
        return False
    m, d = module_arch[3:], device_arch[3:].rstrip("a")
    return m[:-1] == d[:-1] and int(m[-1]) <= int(d[-1])


def _sources(type_):
    csrc = os.path.join(HERE, "csrc")
    return [os.path.join(csrc, f"{type_}_launch.cpp"), os.path.join(csrc, f"{type_}.cpp")]


def _digest(type_):
    h = hashlib.sha256(torch.__version__.encode())
    for path in _sources(type_) + [os.path.join(HERE, "csrc", f) for f in (
            f"{type_}_module.h", "common.h", "direct_call.h", "rotary_tables.h", "launch.h", "grid_rules.h", "file_pick.h",
            "loaded_module.h", "tiled_launch.h", "tensor_map_rules.h", "grid_launch_rules.h")]:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


# {type: the op's function in its extension's Python module}: the eager path's call, without the
# dispatcher (ops/direct_call.h); filled by load().
DIRECT = {}


def load(types, verbose=False):
    """Builds or loads each type's extension; returns (loaded types, {type: why not})."""
    if not torch.cuda.is_available():
        return [], {t: "no CUDA device" for t in types}
    arch = _arch()
    archs = {op["type"]: [m["arch"] for m in op["modules"]] for op in manifest()["ops"]}
    loaded, failed = [], {}
    for t in types:
        if not any(runs_on(a, arch) for a in archs[t]):
            failed[t] = (f"the package holds the {t} kernel compiled for {', '.join(archs[t])}, not for this GPU "
                         f"({arch}): export it again with --arch {arch}")
            print(f"autokernel_ops: {t} is not loaded: {failed[t]}", file=sys.stderr)
            continue
        try:
            module = cpp_extension.load(
                name=f"autokernel_{t}_{_digest(t)}", sources=_sources(t),
                extra_cflags=["-O3", "-std=c++17"], extra_ldflags=_LDFLAGS,
                extra_include_paths=[os.path.join(HERE, "csrc")],
                with_cuda=True, is_python_module=True, verbose=verbose)
            DIRECT[t] = getattr(module, t)
            loaded.append(t)
        except Exception as e:  # the op stays absent; nothing is patched for it
            failed[t] = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            print(f"autokernel_ops: {t} was not built: {failed[t]} (set AUTOKERNEL_OPS_VERBOSE=1 for the compiler's "
                  "output)", file=sys.stderr)
    return loaded, failed
