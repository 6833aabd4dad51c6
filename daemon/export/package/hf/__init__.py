"""autokernel_ops (hf-kernels layout): the kernels an autokernel run kept, as custom ops under
kernel-builder's extension name, and the same patch as the PyTorch package:

    with autokernel_ops.patched() as p:
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
from ._ops import add_op_namespace_prefix, ops
from ._patch import Patches, find_targets
from ._replacements import COMPILE_OPS, make_replacement, set_compile_ops, tuned_shapes

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest.json")) as _f:
    _OPS = json.load(_f)["ops"]
TYPES = [op["type"] for op in _OPS]
VERSIONS = {op["type"]: op.get("contract_version", 1) for op in _OPS}  # the contract version of each file
SHAPES = tuned_shapes(_OPS)  # the shapes and dtypes each type's files were tuned at

register_fakes(add_op_namespace_prefix, TYPES, VERSIONS)
# Each module loads now, in the current device's context: never at a first launch inside a capture.
LOADED, FAILED = load_modules(ops, TYPES) if torch.cuda.is_available() else ([], {t: "no CUDA device" for t in TYPES})


def compile_ops():
    return sorted(COMPILE_OPS)


def decide_for_compile(model, inputs, mode="default", types=None, **kwargs):
    return _decide(model, inputs, mode, LOADED if types is None else types, **kwargs)


def patch(modules=None):
    targets = find_targets(sys.modules if modules is None else modules, set(LOADED))
    return Patches().apply(targets, lambda t, original: make_replacement(t, original, ops, VERSIONS, shapes=SHAPES))


patched = patch
