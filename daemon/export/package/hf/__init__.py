"""autokernel_ops (hf-kernels layout): the kernels an autokernel run kept, as custom ops under
kernel-builder's extension name, and the same patch as the PyTorch package:

    with autokernel_ops.patched() as p:
        y = model(x)
"""
import json
import os
import sys

import torch

from ._fakes import register as register_fakes
from ._ops import add_op_namespace_prefix, ops
from ._patch import Patches, find_targets
from ._replacements import make_replacement

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest.json")) as _f:
    TYPES = [op["type"] for op in json.load(_f)["ops"]]

register_fakes(add_op_namespace_prefix, TYPES)


def patch(modules=None):
    targets = find_targets(sys.modules if modules is None else modules, set(TYPES))
    return Patches().apply(targets, lambda t, original: make_replacement(t, original, ops))


patched = patch
