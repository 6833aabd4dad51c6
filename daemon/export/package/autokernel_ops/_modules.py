"""Loads each op's compiled module into the CUDA context now, at import, rather than at the op's
first launch: a first launch may come inside a CUDA graph capture (torch.cuda.graph, or
torch.compile's mode="reduce-overhead"), where loading a module has no place. Each op extension
registers <type>_load(int device) for it (ops/common.h, AK_LOAD_OP)."""
import sys

import torch


def load_modules(ops, types, device=None):
    """Loads the module of each type on `device` (default: the current one); returns
    (types loaded, {type: why not}). A type whose module does not load is said once here: its op
    would fail at every call, so it is left out of the patch."""
    if device is None:
        device = torch.cuda.current_device()
    loaded, failed = [], {}
    for t in types:
        try:
            getattr(ops, f"{t}_load")(int(device))
            loaded.append(t)
        except Exception as e:  # the op stays unpatched; its error says what to do
            failed[t] = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            print(f"autokernel_ops: the {t} module does not load on cuda:{device}: {failed[t]}", file=sys.stderr)
    return loaded, failed
