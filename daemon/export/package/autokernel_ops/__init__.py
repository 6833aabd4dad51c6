"""autokernel_ops: the kernels an autokernel run kept, as PyTorch custom ops (torch.ops.autokernel.*),
with one line to use them in a model:

    import autokernel_ops
    with autokernel_ops.patched() as p:   # or autokernel_ops.patch() for good
        print(p.names)                      # what was replaced
        y = model(x)

Written by `autokernel export`; manifest.json says which kernel files, from which run, measured how."""
import os

import torch

from . import _load
from ._fakes import register as register_fakes
from ._patch import Patches, find_targets

MANIFEST = _load.manifest()
TYPES = [op["type"] for op in MANIFEST["ops"]]
LOADED, FAILED = _load.load(TYPES, verbose=os.environ.get("AUTOKERNEL_OPS_VERBOSE") == "1")


register_fakes(lambda t: f"autokernel::{t}", LOADED)


def patch(modules=None, also=()):
    """Replaces, for good, the functional calls and model classes the loaded ops serve (see
    _patch.py); returns the Patches (names, restore()). Call it after the model's modules are
    imported: a class defined later is not seen. `also` names more modules to look in."""
    import sys

    from ._replacements import make_replacement
    targets = find_targets(sys.modules if modules is None else modules, set(LOADED), also)
    return Patches().apply(targets, make_replacement)


patched = patch  # the Patches it returns restore at the end of a `with` block
