"""The replacements a patch installs: each calls an autokernel op where the call is one the kernel
computes exactly, and the original otherwise. Forward only: a call that needs gradients runs the
original, since the ops have no backward.

Thin by design: a replacement runs on every call of the model's norms and softmaxes, and its
Python is time the GPU may wait for. So each makes only the checks the op cannot make (the
arguments of the call it stands for, gradients, compilation) and exactly one op call, bound once
(the op's overload, not its packet); what the op checks itself (dtype, device, contiguity, the
weight's length) it checks in C++ and falls back to PyTorch's op there, said once.

Under torch.compile a replacement runs the original unless its type is in COMPILE_OPS (decided on
the whole compiled step: _compile_decision.py), so that compiling a patched model is never slower
than compiling it unpatched. Inside a CUDA graph capture, nothing here synchronises or allocates:
the first-call check of a class or helper (allclose, a host sync) waits for an eager call outside
a capture, and the original runs meanwhile."""
import sys

import torch

# docs/design.md's tolerances (atol = rtol): the first-call check of a class or function target.
_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}
# F.rms_norm's epsilon when given None, per dtype, computed once rather than at every call.
_EPS = {dt: torch.finfo(dt).eps for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64)}
_compiling = torch.compiler.is_compiling
_capturing = torch.cuda.is_current_stream_capturing
_grad_enabled = torch.is_grad_enabled

# The op types that stand in for Inductor's code when a patched model is compiled; empty until a
# decision (decide_for_compile or set_compile_ops) puts some in. Read when a model is compiled.
COMPILE_OPS = set()


def set_compile_ops(types):
    """Enables, under torch.compile, the replacements of these op types (and disables the rest).
    Takes effect for the models compiled afterwards (torch._dynamo.reset() drops earlier ones)."""
    COMPILE_OPS.clear()
    COMPILE_OPS.update(types)


def _needs_grad(*tensors):
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def _same(a, b):
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if not isinstance(a, torch.Tensor):
        return a == b
    tol = _TOLERANCE.get(a.dtype, 1e-4)
    return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a.float(), b.float(), rtol=tol, atol=tol)


_UNCHECKED, _CHECKED, _WITHDRAWN = 0, 1, 2


def _uncovered(*args, **kwargs):
    """The original a probe is made with: None says the op did not run."""
    return None


def _checked_on_first_call(target, original, make, learn=None):
    """For code the package has not seen (a model's own class or helper): the first eager call
    outside a CUDA graph capture runs both and compares (a host sync); a disagreement withdraws the
    replacement for good, logged. Until checked, a call being compiled or captured runs the
    original.

    make(original, state, first_call) builds the replacement, which begins with
    `if state[0] != _CHECKED: return first_call(...)` and otherwise runs the op or `original`
    itself: once checked, a call is that one Python frame and the op (the model calls its norms and
    rotary helper dozens of times a step, and every frame is CPU time the GPU may wait for). The
    comparison runs a probe, the same replacement made with an original that returns None, so that
    a call the op does not cover is told apart and left unchecked.

    learn(theirs, *args), when given, sees the original's result before the probe runs: what a
    replacement must match that no argument says (the dtype a rotary class gives its tables)."""
    state = [_UNCHECKED]
    probe = make(_uncovered, [_CHECKED], None)

    def first_call(*args, **kwargs):
        if state[0] == _WITHDRAWN or _compiling() or _capturing():
            return original(*args, **kwargs)
        theirs = original(*args, **kwargs)
        if learn is not None:
            learn(theirs, *args)
        mine = probe(*args, **kwargs)
        if mine is None:
            return theirs
        state[0] = _CHECKED
        if not _same(mine, theirs):
            state[0] = _WITHDRAWN
            print(f"autokernel_ops: {target.name} disagrees with autokernel::{target.op} on its first call: "
                  "left unpatched", file=sys.stderr)
        return theirs

    return make(original, state, first_call)


def _compile_gated(type_, replacement, original):
    """`replacement` outside compilation, and under it where type_ is in COMPILE_OPS."""
    def call(*args, **kwargs):
        if _traced(args[0] if args else kwargs.get("input")) and type_ not in COMPILE_OPS:
            return original(*args, **kwargs)
        return replacement(*args, **kwargs)
    return call


_Tensor = torch.Tensor


def _traced(x):
    """Whether this call is being traced rather than run: under Dynamo, or on a tensor that is not a
    plain one (the fake and functional tensors of AOTAutograd, which runs a functional replacement
    that Dynamo left in the graph as F.layer_norm, say). A traced call is decided like a compiled
    one (COMPILE_OPS), and takes the registered op, whose fake the tracer needs."""
    return _compiling() or type(x) is not _Tensor


# Each replacement calls `direct` (the op's function without the dispatcher, _load.DIRECT) when run
# and the registered op when traced: a direct function cannot be traced. `_traced` once a call.
def _rms_norm(op, original, direct=None):
    eager = direct or op

    def rms_norm(input, normalized_shape, weight=None, eps=None):
        traced = _traced(input)
        if weight is None or len(normalized_shape) != 1 or (traced and "rmsnorm" not in COMPILE_OPS) \
                or (_grad_enabled() and (input.requires_grad or weight.requires_grad)):
            return original(input, normalized_shape, weight, eps)
        return (op if traced else eager)(input, weight, _EPS[input.dtype] if eps is None else eps)
    return rms_norm


def _layer_norm(op, original, direct=None):
    eager = direct or op

    def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
        traced = _traced(input)
        if weight is None or bias is None or len(normalized_shape) != 1 \
                or (traced and "layernorm" not in COMPILE_OPS) \
                or (_grad_enabled() and (input.requires_grad or weight.requires_grad or bias.requires_grad)):
            return original(input, normalized_shape, weight, bias, eps)
        return (op if traced else eager)(input, weight, bias, eps)
    return layer_norm


def _softmax(op, original, direct=None):
    eager = direct or op

    def softmax(input, dim=None, *args, **kwargs):
        traced = _traced(input)
        # F.softmax's third positional is _stacklevel, torch.softmax's is dtype; any of them, or a
        # keyword (a dtype), is a call the kernel does not make.
        if args or kwargs or (dim != -1 and dim != input.ndim - 1) or (traced and "softmax" not in COMPILE_OPS) \
                or (_grad_enabled() and input.requires_grad):
            return original(input, dim, *args, **kwargs)
        return (op if traced else eager)(input)
    return softmax


def _linear_call(op, original, direct=None):
    """F.linear(input, weight, bias) as nn.Linear calls it: the matmul op, which runs its kernel at
    the shapes its files were measured faster than cuBLAS at and PyTorch's F.linear at any other
    (in C++, said once)."""
    eager = direct or op

    def linear(input, weight, bias=None):
        traced = _traced(input)
        if (traced and "matmul" not in COMPILE_OPS) or (_grad_enabled() and (
                input.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad))):
            return original(input, weight, bias)
        return (op if traced else eager)(input, weight, bias)
    return linear


_said = set()


def _declined(op, why):
    """Says once per op and reason that PyTorch's op runs instead, as the ops say it in C++."""
    if (op, why) not in _said:
        _said.add((op, why))
        print(f"autokernel_ops: {op} runs PyTorch's op instead: {why} (said once)", file=sys.stderr)


def _sdpa_declines(query, key, attn_mask, dropout_p, is_causal, scale, enable_gqa, rest):
    """Why an SDPA call is not one the flash_attention op computes, or "": the op takes q, k and v
    with no mask (transformers' causal mask is recognised where it decides it: eagerly, and under
    capture() by _graphs.MaskDecisions, it calls SDPA with is_causal and no mask), no dropout, the
    default scale 1/sqrt(D) (or that value given), grouped-query heads only as enable_gqa asks."""
    if rest:
        return f"arguments {sorted(rest)} it does not take"
    if attn_mask is not None:
        return "a mask (attn_mask): causal calls without one run the kernel"
    if dropout_p != 0.0:
        return "dropout"
    if type(is_causal) is not bool:
        return "is_causal is not a bool"
    if not isinstance(query, _Tensor) or not isinstance(key, _Tensor) or query.dim() != 4 or key.dim() != 4:
        return "q or k is not [B, heads, S, D]"
    if scale is not None and abs(scale * query.shape[-1] ** 0.5 - 1.0) > 1e-6:
        return f"a scale other than 1/sqrt(D) ({scale})"
    if key.shape[1] != query.shape[1] and not enable_gqa:
        return "k has other heads than q without enable_gqa (PyTorch's SDPA says why)"
    return ""


def _sdpa(op, original, direct=None):
    """F.scaled_dot_product_attention as a decoder calls it (version 2 of the contract): causal or
    not, with no mask, no dropout, the default scale (transformers gives head_dim ** -0.5: that
    value), grouped-query heads with enable_gqa (or k and v repeated to q's heads: plain
    multi-head), q, k and v as the projections' transposed views or contiguous. The op checks the
    rest in C++ (dtype, device, strides, lengths, the shapes its files were measured faster than
    SDPA at) and runs PyTorch's SDPA otherwise, saying why once; so does this for what it declines.
    Under capture() transformers' causal mask is dropped for this (_graphs.py)."""
    eager = direct or op

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False, **rest):
        traced = _traced(query)
        if (traced and "flash_attention" not in COMPILE_OPS) \
                or (_grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad)):
            return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                            scale=scale, enable_gqa=enable_gqa, **rest)
        why = _sdpa_declines(query, key, attn_mask, dropout_p, is_causal, scale, enable_gqa, rest)
        if why:
            _declined("flash_attention", why)
            return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                            scale=scale, enable_gqa=enable_gqa, **rest)
        return (op if traced else eager)(query, key, value, is_causal)
    return scaled_dot_product_attention


def _sdpa_v1(op, original, direct=None):
    """For a file of version 1 of the flash_attention contract (an older run's): is_causal with no
    mask, no dropout, the default scale; the op runs its kernel at the shapes its files were
    measured faster than SDPA at (one head count, contiguous q, k and v) and PyTorch's SDPA
    otherwise."""
    eager = direct or op

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False, **rest):
        traced = _traced(query)
        if rest or attn_mask is not None or not is_causal or dropout_p != 0.0 or query.dim() != 4 \
                or (traced and "flash_attention" not in COMPILE_OPS) \
                or (scale is not None and abs(scale * query.shape[-1] ** 0.5 - 1.0) > 1e-6) \
                or (enable_gqa and key.shape[1] != query.shape[1]) \
                or (_grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad)):
            return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                            scale=scale, enable_gqa=enable_gqa, **rest)
        return (op if traced else eager)(query, key, value)
    return scaled_dot_product_attention


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


def _held(module, name, where="_parameters"):
    """module.<name>: from the module's own dict of parameters (or of buffers) where it is one,
    which skips nn.Module's __getattr__ (a failed lookup, then a Python call: about a microsecond a
    call, as much as the rest of the replacement's Python); from getattr otherwise."""
    found = getattr(module, where, _EMPTY).get(name)
    return getattr(module, name, None) if found is None else found


_EMPTY = {}


def _norm_forward(op, type_, direct=None):
    """forward(self, hidden_states) of a model's norm class: the op on the class's weight (and bias)
    and epsilon, read from the instance at each call (a model may load or convert them later)."""
    eager = direct or op
    eps_attribute = {}  # class -> the attribute that holds its epsilon ("" when none): found once

    def make(original, state, first_call):
        def forward(self, hidden_states, *args, **kwargs):
            if state[0] != _CHECKED:
                return first_call(self, hidden_states, *args, **kwargs)
            compiling = _compiling()
            if args or kwargs or (compiling and type_ not in COMPILE_OPS):
                return original(self, hidden_states, *args, **kwargs)
            cls = type(self)
            name = eps_attribute.get(cls)
            if name is None:
                name = eps_attribute[cls] = next((n for n in ("variance_epsilon", "eps") if hasattr(self, n)), "")
            # Under compilation the attributes are read as the class's own code reads them.
            weight = getattr(self, "weight", None) if compiling else _held(self, "weight")
            eps = getattr(self, name, None) if name else None
            # The dtype stays a check here: the class's own forward may promote a mixed-dtype call,
            # which the op's PyTorch fallback would not do the same way.
            if eps is None or not isinstance(weight, _Tensor) or weight.dtype != hidden_states.dtype \
                    or (_grad_enabled() and (hidden_states.requires_grad or weight.requires_grad)):
                return original(self, hidden_states)
            call = op if compiling or type(hidden_states) is not _Tensor else eager  # _traced, compiling known
            if type_ == "rmsnorm":
                return call(hidden_states, weight, float(eps))
            bias = getattr(self, "bias", None) if compiling else _held(self, "bias")
            if not isinstance(bias, _Tensor):
                return original(self, hidden_states)
            return call(hidden_states, weight, bias, float(eps))
        return forward
    return make


def _rotary_tables(op):
    """forward(self, x, position_ids) of a model's rotary-embedding class (LlamaRotaryEmbedding and
    its kin): the step's cos and sin tables from the class's inv_freq and attention_scaling in one
    C++ call (ops/rotary_tables.h), where transformers makes a dozen PyTorch calls under an autocast
    guard, 0.27-0.40 ms of CPU a step before the first layer, while the GPU waits. The rope types
    whose inv_freq changes with the sequence ("dynamic", "longrope") run the original, and so does
    a call being compiled: Inductor fuses the tables itself.

    The tables' dtype is the class's: most round them to x's dtype, some (OLMo2's) return them in
    fp32 and leave the rounding to the rotary helper. Which one a class does, its first call shows
    (_checked_on_first_call's learn): the op is then asked for fp32 tables (`like` an fp32 tensor
    of x's device, made once per device outside any capture)."""
    fp32_classes = set()
    fp32_like = {}  # device -> an empty fp32 tensor there: the op's `like`

    def learn(theirs, self, x, *args):
        if isinstance(theirs, tuple) and theirs and isinstance(theirs[0], _Tensor) and isinstance(x, _Tensor) \
                and theirs[0].dtype == torch.float32 and x.dtype != torch.float32:
            fp32_classes.add(type(self))
            if x.device not in fp32_like:
                fp32_like[x.device] = torch.empty(0, dtype=torch.float32, device=x.device)

    def make(original, state, first_call):
        def forward(self, x, position_ids, *args, **kwargs):
            if state[0] != _CHECKED:
                return first_call(self, x, position_ids, *args, **kwargs)
            rope_type, scaling = getattr(self, "rope_type", None), getattr(self, "attention_scaling", 1.0)
            if args or kwargs or _compiling() or type(rope_type) is not str or "dynamic" in rope_type \
                    or rope_type == "longrope" or type(scaling) not in (float, int):
                return original(self, x, position_ids, *args, **kwargs)
            inv_freq = _held(self, "inv_freq", "_buffers")
            # The op is the CUDA one: every operand on the one GPU.
            if not isinstance(inv_freq, _Tensor) or not isinstance(x, _Tensor) or inv_freq.dim() != 1 \
                    or position_ids.dim() != 2 or not x.is_cuda or x.device != position_ids.device \
                    or inv_freq.device != x.device:
                return original(self, x, position_ids)
            like = fp32_like.get(x.device) if type(self) in fp32_classes else x
            if like is None:  # a device the class's first call was not on: made there on an eager call
                return original(self, x, position_ids)
            return op(inv_freq, position_ids, like, float(scaling))
        return forward
    return make, learn


def _silu_classes():
    """The activation modules that compute F.silu: torch's nn.SiLU, and transformers' own where it
    is loaded (its ACT2FN["silu"] is transformers.activations.SiLUActivation, not nn.SiLU, in
    transformers 5). Looked up when the patch is made, after the model's modules are imported."""
    found = {torch.nn.SiLU}
    own = getattr(sys.modules.get("transformers.activations"), "SiLUActivation", None)
    if isinstance(own, type):
        found.add(own)
    return frozenset(found)


_Linear = torch.nn.Linear
# nn.Module's global hooks (profile --modules, for one, registers them): dicts changed in place.
_hook_tables = getattr(torch.nn.modules, "module", None)


def _plain_linears(*modules):
    """Whether each module is exactly an nn.Linear that nothing hooks: its forward is then
    F.linear(x, weight, bias), and calling that directly skips nn.Module.__call__ (a frame and its
    hook checks) and two __getattr__ lookups, a few microseconds a projection in a step the CPU may
    be issuing no faster than the GPU runs it. A subclass (LoRA, a quantized Linear), a module with
    a hook, or any global hook gets its own call."""
    g = _hook_tables
    if g is None or g._global_forward_hooks or g._global_forward_pre_hooks:
        return False
    for m in modules:
        if type(m) is not _Linear or m._forward_hooks or m._forward_pre_hooks \
                or getattr(m, "_compiled_call_impl", None) is not None:
            return False
    return True


_functional = torch.nn.functional


def _project(m, x):
    """A plain nn.Linear's forward on x, its parameters read from its own dict; F.linear looked up
    at the call, as nn.Linear's forward does, so a patched one (the matmul op) serves it too."""
    p = m._parameters
    return _functional.linear(x, p["weight"], p["bias"])


_MLP_PARTS = ("gate_proj", "up_proj", "down_proj", "act_fn")


def _mlp_parts(mlp, compiling):
    """A gated MLP's gate, up and down projections and its activation (None where absent): under
    compilation read as the class's own code reads them, else from nn.Module's dict of submodules,
    without its __getattr__."""
    if compiling:
        return tuple(getattr(mlp, name, None) for name in _MLP_PARTS)
    held = getattr(mlp, "_modules", _EMPTY)
    return held.get("gate_proj"), held.get("up_proj"), held.get("down_proj"), held.get("act_fn")


_GATE_UP_PARTS = ("gate_up_proj", "down_proj", "activation_fn")


def _gate_up_parts(mlp, compiling):
    """A gated MLP's fused gate and up projection, its down projection and its activation as
    transformers' Phi3MLP names them (None where absent), read as _mlp_parts reads its parts."""
    if compiling:
        return tuple(getattr(mlp, name, None) for name in _GATE_UP_PARTS)
    held = getattr(mlp, "_modules", _EMPTY)
    return held.get("gate_up_proj"), held.get("down_proj"), held.get("activation_fn")


def _gate_up_forward(x, gate_up, down, act, op, eager, compiling, grad, probing):
    """Phi3MLP's forward: down_proj(up * act(gate)) with gate and up the halves of gate_up_proj(x)
    (chunk(2, dim=-1): two views a row of 2 I apart, up I elements after gate), the halves handed
    to the op where they lie. The op's value is the model's: silu(g) * u and u * silu(g) are one
    fp32 product, rounded once (the model rounds the SiLU first: within the dtype's tolerance)."""
    plain = not grad and not compiling and type(x) is _Tensor and _plain_linears(gate_up, down)
    h = _project(gate_up, x) if plain else gate_up(x)
    g, u = h.chunk(2, dim=-1)
    if grad and h.requires_grad:
        # No backward: the model's own product on the projection already made (left unchecked).
        return None if probing else down(u * act(g))
    if plain:
        return _project(down, eager(g, u))
    return down((op if compiling or type(g) is not _Tensor else eager)(g, u))


_DTYPE_NAME = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}


def tuned_shapes(manifest_ops):
    """{type: the (shape, dtype) pairs its exported files were tuned at}, or None for a type with a
    file of unknown shape (exported on its own: it serves every call). From manifest.json's ops."""
    out = {}
    for op in manifest_ops:
        pairs = set()
        for f in op.get("files") or [op]:
            shape = f.get("shape") or ""
            if not shape:
                pairs = None
                break
            pairs.add((tuple(int(v) for v in shape.split("x")), f.get("dtype", "")))
        out[op["type"]] = pairs
    return out


def _version_of(w):
    """A tensor's count of in-place writes; -1 for an inference tensor, which keeps none (and which
    nothing can write in place outside inference mode)."""
    try:
        return w._version
    except RuntimeError:
        return -1


def _fused_weights(mlp, gate, up, down):
    """The MLP's weights as fused_mlp takes them (w_gate and w_up [K, I], w_down [I, K]: its Linears'
    transposed), copied once and kept on the instance; made again when a weight changes (another
    tensor, or written in place). None inside a CUDA graph capture when not made yet: a copy there
    would be recorded, not made."""
    ws = (gate._parameters["weight"], up._parameters["weight"], down._parameters["weight"])
    key = tuple((w.data_ptr(), _version_of(w), w.dtype) for w in ws)
    held = mlp.__dict__.get("_autokernel_fused_weights")
    if held is not None and held[0] == key:
        return held[1]
    if _capturing():
        return None
    with torch.no_grad():
        made = tuple(w.t().contiguous() for w in ws)
    mlp.__dict__["_autokernel_fused_weights"] = (key, made)
    return made


def _fused_call(fused, self, x, gate, up, down):
    """fused_mlp's result for this call, or None where its files were not measured faster at the
    call's shape (fused = (op, shapes)), a projection has a bias, or x is not contiguous."""
    op, shapes = fused
    p = gate._parameters
    w = p["weight"]
    if p["bias"] is not None or up._parameters["bias"] is not None or down._parameters["bias"] is not None \
            or not x.is_contiguous() or x.dim() == 0:
        return None
    k = x.shape[-1]
    if shapes is not None and ((x.numel() // k if k else 0, k, w.shape[0]), _DTYPE_NAME.get(x.dtype)) not in shapes:
        return None
    weights = _fused_weights(self, gate, up, down)
    return None if weights is None else op(x, *weights)


def _gated_mlp(op, direct=None, fused=None, strided=True):
    """forward(self, x) of a model's MLP class where it is gated as transformers' LlamaMLP and its
    kin write it, down_proj(act_fn(gate_proj(x)) * up_proj(x)) with act_fn a SiLU module, or as
    Phi3MLP writes it, one gate_up_proj whose halves are gate and up and an activation_fn (where the
    exported swiglu reads strided operands, strided: contract version 2): the gate product in one op
    call, where eager PyTorch launches two kernels and writes the activation to memory between them.
    Any other MLP runs its own forward: GPT2MLP's c_fc and c_proj, a GELU-gated one (GemmaMLP). The
    projections are the model's own modules, called as its forward calls them; the op stands for the
    activation and the product only.

    With fused_mlp exported (fused = (its op, the shapes its files were tuned at)), a call at one of
    those shapes, in inference, on plain Linears without bias, is the whole MLP in one launch, on a
    transposed copy of the three weights kept on the instance (their memory once more); any other
    call takes the path above (op None: no swiglu exported, the model's own product)."""
    eager, silu = (direct or op), _silu_classes()
    # The classes whose instance lacked the parts on the first call's probe: a model builds every
    # instance of its MLP class alike from one config, so such a class runs its own forward from
    # then on without first_call's probe at every call (a capture query, lookups, frames).
    other = set()

    def make(original, state, first_call):
        probing = original is _uncovered  # the first call's probe (_checked_on_first_call)

        def forward(self, x, *args, **kwargs):
            if state[0] != _CHECKED:
                if type(self) in other:
                    return original(self, x, *args, **kwargs)
                return first_call(self, x, *args, **kwargs)
            compiling = _compiling()
            if args or kwargs or (compiling and "swiglu" not in COMPILE_OPS):
                return original(self, x, *args, **kwargs)
            gate, up, down, act = _mlp_parts(self, compiling)
            if gate is None and up is None and op is not None and strided:
                gate_up, down, act = _gate_up_parts(self, compiling)
                if gate_up is not None and down is not None and type(act) in silu:
                    grad = _grad_enabled()
                    if grad and x.requires_grad:
                        return original(self, x)
                    return _gate_up_forward(x, gate_up, down, act, op, eager, compiling, grad, probing)
            # Exactly one of those classes: a subclass, or another activation (GELU-gated MLPs exist), is not.
            if gate is None or up is None or down is None or type(act) not in silu:
                if probing:
                    other.add(type(self))
                return original(self, x)
            grad = _grad_enabled()
            if grad and x.requires_grad:
                return original(self, x)
            # Without gradients (inference) and when nothing would see the module calls, the
            # projections as their forward computes them; otherwise the model's own calls.
            plain = not grad and not compiling and type(x) is _Tensor and _plain_linears(gate, up, down)
            if plain and fused is not None:
                y = _fused_call(fused, self, x, gate, up, down)
                if y is not None:
                    return y
            g, u = (_project(gate, x), _project(up, x)) if plain else (gate(x), up(x))
            if grad and (g.requires_grad or u.requires_grad):
                # The op has no backward: the projections' own weights train. PyTorch's product on
                # the projections already made (the probe leaves such a call unchecked).
                return None if probing else down(act(g) * u)
            if op is None:
                return None if probing else down(act(g) * u)
            if plain:
                return _project(down, eager(g, u))
            return down((op if compiling or type(g) is not _Tensor else eager)(g, u))
        # The classes found not to be gated MLPs: what verify counts apart from declined calls.
        forward.other_classes = other
        return forward
    return make


def _plain_rotary_call(args, kwargs):
    """Whether apply_rotary_pos_emb's arguments after q, k, cos and sin are its defaults: helpers
    differ in what a fifth positional means (position_ids in some, unsqueeze_dim in others), so any
    positional, and any keyword but position_ids and unsqueeze_dim=1, is left to the original."""
    return not args and all(k == "position_ids" or (k == "unsqueeze_dim" and v == 1) for k, v in kwargs.items())


def _rotary(op, direct=None):
    """apply_rotary_pos_emb(q, k, cos, sin) as transformers calls it (cos, sin [batch, seq,
    head_dim], unsqueezed at dim 1), or as a model's own helper of that name takes a table of
    [seq, head_dim] broadcast over batch and heads: one call of the op on q and k as they are,
    strided views included; the op checks the rest and runs PyTorch's code for what its kernel does
    not cover. (A helper that meant something else by a 2-D table disagrees on its first call, which
    withdraws the replacement.)"""
    eager = direct or op

    def make(original, state, first_call):
        def rotary(q, k, cos, sin, *args, **kwargs):
            if state[0] != _CHECKED:
                return first_call(q, k, cos, sin, *args, **kwargs)
            compiling = _compiling()
            if (args or kwargs) and not _plain_rotary_call(args, kwargs) or not 2 <= cos.ndim <= 3 \
                    or (compiling and "rotary_embedding" not in COMPILE_OPS) \
                    or (_grad_enabled() and (q.requires_grad or k.requires_grad)):
                return original(q, k, cos, sin, *args, **kwargs)
            return (op if compiling or type(q) is not _Tensor else eager)(q, k, cos, sin)
        return rotary
    return make


def _half_table(t, seq, dim):
    """cos or sin as the kernel takes it, [seq, head_dim / 2], from [seq, dim] or [1, seq, dim]."""
    if t.dim() == 3 and t.shape[0] == 1:
        t = t[0]
    if t.dim() != 2 or t.shape[0] != seq or t.shape[1] != dim:
        return None
    return t[:, : dim // 2].contiguous()


def _rotary_v1(ops):
    """For a file of version 1 of the rotary contract (an older run's): q alone, contiguous."""
    def make(original, state, first_call):
        def rotary(q, k, cos, sin, *args, **kwargs):
            if state[0] != _CHECKED:
                return first_call(q, k, cos, sin, *args, **kwargs)
            if (args or kwargs) and not _plain_rotary_call(args, kwargs) or q.dim() != 4 or k.dim() != 4 \
                    or q.shape[2] != k.shape[2] or q.shape[3] != k.shape[3] or cos.dtype != q.dtype \
                    or k.dtype != q.dtype or _needs_grad(q, k, cos, sin) \
                    or (_compiling() and "rotary_embedding" not in COMPILE_OPS):
                return original(q, k, cos, sin, *args, **kwargs)
            c, s = _half_table(cos, q.shape[2], q.shape[3]), _half_table(sin, q.shape[2], q.shape[3])
            if c is None or s is None:
                return original(q, k, cos, sin, *args, **kwargs)
            # The kernel reads q contiguous; the usual q is a transposed view: one copy, then RoPE.
            return ops.rotary_embedding(q.contiguous(), c, s), ops.rotary_embedding(k.contiguous(), c, s)
        return rotary
    return make


def make_replacement(target, original, ops=None, versions=None, direct=None, shapes=None):
    """The function to install at `target` (a _patch.Target) in place of `original`; `ops` is the
    op namespace (torch.ops.autokernel unless the package was built under another name), versions
    {type: contract version} from manifest.json (the newest where absent), direct {type: the op's
    function without the dispatcher} for eager calls (_load.DIRECT; none: the registered op),
    shapes {type: its files' tuned (shape, dtype) pairs, or None: any} (tuned_shapes; none: any)."""
    direct = direct or {}
    shapes = shapes or {}
    ops = torch.ops.autokernel if ops is None else ops
    if target.kind == "functional":
        if target.type == "cross_entropy":
            return _compile_gated("cross_entropy", _cross_entropy(ops, original), original)
        make = {"rmsnorm": _rms_norm, "layernorm": _layer_norm, "softmax": _softmax, "matmul": _linear_call,
                "flash_attention": _sdpa_v1 if (versions or {}).get("flash_attention", 2) == 1 else _sdpa}[target.type]
        return make(getattr(ops, target.type).default, original, direct.get(target.type))
    if target.op == "rotary_tables":
        make, learn = _rotary_tables(ops.rotary_tables.default)
        return _checked_on_first_call(target, original, make, learn)
    if target.type in ("swiglu", "fused_mlp"):
        types = target.types
        fused = None
        if "fused_mlp" in types:
            fused_direct = direct.get("fused_mlp") or ops.fused_mlp.default
            fused = (fused_direct, shapes.get("fused_mlp"))
        swiglu = ops.swiglu.default if "swiglu" in types else None
        # A file of swiglu's version 1 (an older run's) reads gate and up dense only.
        strided = (versions or {}).get("swiglu", 2) >= 2
        make = _gated_mlp(swiglu, direct.get("swiglu") if swiglu is not None else None, fused, strided)
    elif target.kind == "class":
        make = _norm_forward(getattr(ops, target.type).default, target.type, direct.get(target.type))
    elif (versions or {}).get("rotary_embedding", 2) == 1:
        make = _rotary_v1(ops)
    else:
        make = _rotary(ops.rotary_embedding.default, direct.get("rotary_embedding"))
    return _checked_on_first_call(target, original, make)
