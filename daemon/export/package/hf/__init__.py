"""autokernel_ops (hf-kernels layout): the kernels an autokernel run kept, as custom ops under this
build's own namespace (_ops.py), with the layers the Hugging Face `kernels` library swaps into a
model (layers.py) and the same patch as the PyTorch package:

    from kernels import get_local_kernel
    ak = get_local_kernel(Path("DIR"))       # DIR: what autokernel export --format hf-kernels wrote
    with ak.patched() as p:                  # or kernelize with ak.layers (README.md)
        y = model(x)
"""
import json
import os
import sys

import torch

from ._compile_decision import decide_for_compile as _decide
from ._fakes import register as register_fakes
from ._graphs import CaptureError, capture
from ._modules import load_modules
from . import _ops as _this_build
from ._ops import add_op_namespace_prefix, ops
from ._patch import Patches, find_targets
from ._replacements import COMPILE_OPS, make_replacement, set_compile_ops, tuned_shapes

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest.json")) as _f:
    MANIFEST = json.load(_f)
TYPES = [op["type"] for op in MANIFEST["ops"]]
VERSIONS = {op["type"]: op.get("contract_version", 1) for op in MANIFEST["ops"]}  # the contract version of each file
SHAPES = tuned_shapes(MANIFEST["ops"])  # the shapes and dtypes each type's files were tuned at
register_fakes(add_op_namespace_prefix, TYPES, VERSIONS)
# Each module loads now, in the current device's context: never at a first launch inside a capture.
LOADED, FAILED = load_modules(ops, TYPES) if torch.cuda.is_available() else ([], {t: "no CUDA device" for t in TYPES})


def _direct_functions(types):
    """{type: the op as a plain function, without the dispatcher}, where the library was built with
    `build_variant.py --direct-calls` (each op also the one function of a Python module of its own,
    PyInit_<namespace>_<type>, ops/common.h): the layers and the patch call it for calls that run,
    the registered op for calls being traced. The default build, abi3 as the kernels library wants
    it, and kernel-builder's (its _ops.py names no LIBRARY) have none: the registered op serves
    every call there."""
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_file_location
    library, namespace = getattr(_this_build, "LIBRARY", None), getattr(_this_build, "NAMESPACE", None)
    if library is None or namespace is None:
        return {}
    found, missing = {}, []
    for t in types:
        name = f"{namespace}_{t}"
        try:
            spec = spec_from_file_location(name, library, loader=ExtensionFileLoader(name, library))
            found[t] = getattr(module_from_spec(spec), t)
        except (ImportError, AttributeError):
            missing.append(t)
    if found and missing:  # a build with direct calls that lacks some: not one this package makes
        print(f"autokernel_ops: {', '.join(missing)} without a direct call in {os.path.basename(library)}: the "
              "registered op serves its eager calls", file=sys.stderr)
    return found


DIRECT = _direct_functions(LOADED)

from . import layers  # noqa: E402  (reads LOADED, SHAPES and VERSIONS)


def load_on(device):
    """Loads every op's module on another GPU (device index) now: before a graph is captured there."""
    return load_modules(ops, LOADED, device)


def compile_ops():
    return sorted(COMPILE_OPS)


def decide_for_compile(model, inputs, mode="default", types=None, **kwargs):
    return _decide(model, inputs, mode, LOADED if types is None else types, **kwargs)


def patch(modules=None, also=()):
    targets = find_targets(sys.modules if modules is None else modules, set(LOADED), also)
    return Patches().apply(targets, lambda t, original: make_replacement(t, original, ops, VERSIONS, direct=DIRECT,
                                                                             shapes=SHAPES))


patched = patch
