"""The replacements a patch installs: each calls an autokernel op where the call is one the kernel
computes exactly, and the original otherwise. Forward only: a call that needs gradients runs the
original, since the ops have no backward."""
import sys

import torch

# DESIGN.md's tolerances (atol = rtol): the first-call check of a class or function target.
_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}


def _needs_grad(*tensors):
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def _same(a, b):
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if not isinstance(a, torch.Tensor):
        return a == b
    tol = _TOLERANCE.get(a.dtype, 1e-4)
    return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a.float(), b.float(), rtol=tol, atol=tol)


def _checked_on_first_call(target, original, fast):
    """For code the package has not seen (a model's own class or helper): the first eager call runs
    both and compares; a disagreement withdraws the replacement for good, logged. Until checked, a
    call being compiled runs the original."""
    state = {"checked": False, "withdrawn": False}

    def call(*args, **kwargs):
        if state["withdrawn"]:
            return original(*args, **kwargs)
        if not state["checked"]:
            if torch.compiler.is_compiling():
                return original(*args, **kwargs)
            mine = fast(*args, **kwargs)
            if mine is None:
                return original(*args, **kwargs)
            theirs = original(*args, **kwargs)
            state["checked"] = True
            if not _same(mine, theirs):
                state["withdrawn"] = True
                print(f"autokernel_ops: {target.name} disagrees with autokernel::{target.type} on its first call: "
                      "left unpatched", file=sys.stderr)
            return theirs
        mine = fast(*args, **kwargs)
        return original(*args, **kwargs) if mine is None else mine

    return call


def _rms_norm(ops, original):
    def rms_norm(input, normalized_shape, weight=None, eps=None):
        if weight is None or len(normalized_shape) != 1 or weight.dtype != input.dtype or _needs_grad(input, weight):
            return original(input, normalized_shape, weight, eps)
        return ops.rmsnorm(input, weight, torch.finfo(input.dtype).eps if eps is None else eps)
    return rms_norm


def _layer_norm(ops, original):
    def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
        if weight is None or bias is None or len(normalized_shape) != 1 or _needs_grad(input, weight, bias) \
                or weight.dtype != input.dtype or bias.dtype != input.dtype:
            return original(input, normalized_shape, weight, bias, eps)
        return ops.layernorm(input, weight, bias, eps)
    return layer_norm


def _softmax(ops, original):
    def softmax(input, dim=None, *args, **kwargs):
        # F.softmax's third positional is _stacklevel, torch.softmax's is dtype: any of them, or a
        # dtype, is a call the kernel does not make.
        if args or kwargs.get("dtype") is not None or dim is None or dim not in (-1, input.dim() - 1) \
                or _needs_grad(input):
            return original(input, dim, *args, **kwargs)
        return ops.softmax(input)
    return softmax


def _cross_entropy(ops, original):
    # ignore_index -100 only, whatever the version of the exported file (manifest.json's
    # contract_version): a version-2 kernel ignores exactly that target, and a version-1 op, finding a
    # target outside [0, classes), runs PyTorch's op with its default ignore_index, -100 again.
    def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                      reduction="mean", label_smoothing=0.0):
        plain = (weight is None and size_average is None and reduce is None and label_smoothing == 0.0
                 and reduction in ("mean", "none") and ignore_index == -100 and input.dim() == 2
                 and target.dim() == 1 and not _needs_grad(input))
        if not plain:
            return original(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing)
        loss, mean = ops.cross_entropy(input, target)
        return mean if reduction == "mean" else loss
    return cross_entropy


def _norm_forward(ops, type_):
    def fast(self, hidden_states, *args, **kwargs):
        weight = getattr(self, "weight", None)
        eps = getattr(self, "variance_epsilon", getattr(self, "eps", None))
        if args or kwargs or not isinstance(weight, torch.Tensor) or eps is None or weight.dtype != hidden_states.dtype \
                or _needs_grad(hidden_states, weight):
            return None
        if type_ == "rmsnorm":
            return ops.rmsnorm(hidden_states, weight, float(eps))
        bias = getattr(self, "bias", None)
        return None if not isinstance(bias, torch.Tensor) else ops.layernorm(hidden_states, weight, bias, float(eps))
    return fast


def _half_table(t, seq, dim):
    """cos or sin as the kernel takes it, [seq, head_dim / 2], from [seq, dim] or [1, seq, dim]."""
    if t.dim() == 3 and t.shape[0] == 1:
        t = t[0]
    if t.dim() != 2 or t.shape[0] != seq or t.shape[1] != dim:
        return None
    return t[:, : dim // 2].contiguous()


def _rotary(ops):
    def fast(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        if unsqueeze_dim != 1 or q.dim() != 4 or k.dim() != 4 or q.shape[2] != k.shape[2] or q.shape[3] != k.shape[3] \
                or cos.dtype != q.dtype or k.dtype != q.dtype or _needs_grad(q, k, cos, sin):
            return None
        c, s = _half_table(cos, q.shape[2], q.shape[3]), _half_table(sin, q.shape[2], q.shape[3])
        if c is None or s is None:
            return None
        # The kernel reads q contiguous; the usual q is a transposed view: one copy, then RoPE.
        return ops.rotary_embedding(q.contiguous(), c, s), ops.rotary_embedding(k.contiguous(), c, s)
    return fast


def make_replacement(target, original, ops=None):
    """The function to install at `target` (a _patch.Target) in place of `original`; `ops` is the
    op namespace (torch.ops.autokernel unless the package was built under another name)."""
    ops = torch.ops.autokernel if ops is None else ops
    if target.kind == "functional":
        return {"rmsnorm": _rms_norm, "layernorm": _layer_norm, "softmax": _softmax,
                "cross_entropy": _cross_entropy}[target.type](ops, original)
    if target.kind == "class":
        fast = _norm_forward(ops, target.type)
    else:
        fast = _rotary(ops)
    return _checked_on_first_call(target, original, fast)
