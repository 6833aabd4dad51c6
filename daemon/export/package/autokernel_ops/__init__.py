"""autokernel_ops: the kernels an autokernel run kept, as PyTorch custom ops (torch.ops.autokernel.*),
with one line to use them in a model:

    import autokernel_ops
    with autokernel_ops.patched() as p:   # or autokernel_ops.patch() for good
        print(p.names)                      # what was replaced
        y = model(x)

At import each op's compiled module is loaded into the current device's CUDA context (so that no
first launch loads it inside a CUDA graph capture); load_on(device) does it for another GPU.
Under torch.compile a replacement runs PyTorch's code unless its type was enabled for compilation:
decide_for_compile(model, inputs, mode) measures which help the compiled step, set_compile_ops(types)
sets a decision made earlier. capture(model, example_inputs) runs the (patched) step as CUDA graphs,
opt-in: step = autokernel_ops.capture(model, (ids,)); y = step(ids) (_graphs.py).

Written by `autokernel export`; manifest.json says which kernel files, from which run, measured how."""
import os

import torch

from . import _load
from ._compile_decision import decide_for_compile as _decide
from ._fakes import register as register_fakes
from ._graphs import CaptureError, capture
from ._modules import load_modules
from ._patch import Patches, find_targets
from ._replacements import COMPILE_OPS, set_compile_ops
from ._replacements import tuned_shapes as _tuned_shapes

MANIFEST = _load.manifest()
TYPES = [op["type"] for op in MANIFEST["ops"]]
# The contract version each exported file follows (an older run's files keep theirs).
VERSIONS = {op["type"]: op.get("contract_version", 1) for op in MANIFEST["ops"]}
# The shapes and dtypes each type's files were tuned at: fused_mlp's replacement asks before it
# copies an MLP's weights (the ops themselves pick a file, or PyTorch's op, in C++).
SHAPES = _tuned_shapes(MANIFEST["ops"])
LOADED, FAILED = _load.load(TYPES, verbose=os.environ.get("AUTOKERNEL_OPS_VERBOSE") == "1")


register_fakes(lambda t: f"autokernel::{t}", LOADED, VERSIONS)
if LOADED:
    LOADED, _not_loaded = load_modules(torch.ops.autokernel, LOADED)
    FAILED.update(_not_loaded)


def load_on(device):
    """Loads every op's module on another GPU (device index) now: before a graph is captured there."""
    return load_modules(torch.ops.autokernel, LOADED, device)


def compile_ops():
    """The op types enabled under torch.compile (none until a decision)."""
    return sorted(COMPILE_OPS)


def decide_for_compile(model, inputs, mode="default", types=None, **kwargs):
    """Decides, on the whole compiled step, which op types run under torch.compile, records it
    (set_compile_ops) and returns (enabled, record): see _compile_decision.py. `types` defaults
    to every loaded type; call it with the model patched and after one eager call."""
    return _decide(model, inputs, mode, LOADED if types is None else types, **kwargs)


def patch(modules=None, also=()):
    """Replaces, for good, the functional calls and model classes the loaded ops serve (see
    _patch.py); returns the Patches (names, restore()). Call it after the model's modules are
    imported: a class defined later is not seen. `also` names more modules to look in."""
    import sys

    from ._replacements import make_replacement
    targets = find_targets(sys.modules if modules is None else modules, set(LOADED), also)
    return Patches().apply(targets, lambda t, original: make_replacement(t, original, versions=VERSIONS, direct=_load.DIRECT,
                                                                             shapes=SHAPES))


patched = patch  # the Patches it returns restore at the end of a `with` block
