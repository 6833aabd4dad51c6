"""The layers the Hugging Face `kernels` library swaps into a model (kernelize): each replaces the
forward of a model's module with this package's op, read from the module's own attributes.

    layer           replaces                                                  op (its file picked per call)
    RMSNorm         transformers' *RMSNorm (weight, variance_epsilon or eps)  rmsnorm
    GatedMLP        *MLP with gate_proj, up_proj, down_proj, act_fn (SiLU)    fused_mlp at its tuned shapes, else swiglu
    GateUpMLP       Phi3MLP: gate_up_proj, down_proj, activation_fn (SiLU)    swiglu on gate_up_proj's halves (contract 2)
    RotaryPosEmb    apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)     rotary_embedding
    RotaryEmbedding *RotaryEmbedding(x, position_ids): the step's cos, sin    rotary_tables (the rotary files' own)

The library holds a layer class to its rules (kernels/layer/layer.py, _validate_layer): no
constructor, no members beyond forward, can_torch_compile and has_backward, and a forward with as
many arguments of the same kinds as the forward it replaces. So each forward calls a function of
this module. Forward only (has_backward = False: kernelize in Mode.TRAINING keeps the model's own
forward), and where a call needs gradients, where the op was not exported or did not load on this
GPU, or where the call is one the op does not make, PyTorch's math runs instead, as transformers
computes it; the ops themselves run PyTorch's op for what their kernels do not cover (said once).
Which model classes take which layer is LAYER_NAMES and layer_name() below.
Under torch.compile the ops are registered custom ops with fake implementations: a full graph."""
import torch
import torch.nn.functional as F
from torch import nn

from . import DIRECT, LOADED, SHAPES, VERSIONS
from ._ops import ops
from ._replacements import (_checked_on_first_call, _fused_call, _gate_up_forward, _gate_up_parts, _plain_linears,
                            _rotary_tables, _traced)

# Each op's overload, bound once: None where the op was not exported or did not load here.
_RMSNORM = ops.rmsnorm.default if "rmsnorm" in LOADED else None
_SWIGLU = ops.swiglu.default if "swiglu" in LOADED else None
# Version 1 of the swiglu contract reads gate and up dense only, not gate_up_proj's halves in place:
# GateUpMLP runs PyTorch's math there.
_GATE_UP = _SWIGLU if VERSIONS.get("swiglu", 2) >= 2 else None
_FUSED_MLP = (ops.fused_mlp.default, SHAPES.get("fused_mlp")) if "fused_mlp" in LOADED else None
# Version 1 of the rotary contract takes q alone, contiguous: its layer runs PyTorch's math.
_ROTARY = ops.rotary_embedding.default if "rotary_embedding" in LOADED and VERSIONS.get("rotary_embedding", 2) >= 2 else None
_TABLES = ops.rotary_tables.default if _ROTARY is not None else None
# The same ops for calls that run rather than are traced: without the dispatcher (DIRECT), as our
# patch calls them; a traced call (torch.compile) needs the registered op and its fake.
_EAGER = {t: DIRECT.get(t, op) for t, op in
          (("rmsnorm", _RMSNORM), ("swiglu", _SWIGLU), ("rotary_embedding", _ROTARY)) if op is not None}
# The activation classes that compute F.silu: torch's, and transformers' own (ACT2FN["silu"] in
# transformers 5), told by name so that transformers need not be imported here.
_SILU = frozenset({("torch.nn.modules.activation", "SiLU"), ("transformers.activations", "SiLUActivation")})


def _grad(*tensors):
    """Whether the call needs gradients (the ops have no backward)."""
    if not torch.is_grad_enabled():
        return False
    for t in tensors:
        if t.requires_grad:
            return True
    return False


def rms_norm(module, x):
    """module(x) for an RMSNorm module: rmsnorm on its weight and epsilon."""
    weight = module.weight
    eps = getattr(module, "variance_epsilon", None)
    if eps is None:
        eps = getattr(module, "eps", None)
    if _RMSNORM is None or eps is None or weight.dtype != x.dtype or _grad(x, weight):
        return rms_norm_math(x, weight, eps)
    return (_RMSNORM if _traced(x) else _EAGER["rmsnorm"])(x, weight, float(eps))


def rms_norm_math(x, weight, eps):
    """transformers' RMSNorm: in fp32, rounded to x's dtype, then the weight."""
    if eps is None:
        return F.rms_norm(x, (x.shape[-1],), weight)
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def gated_mlp(module, x):
    """module(x) for a gated MLP, down_proj(act_fn(gate_proj(x)) * up_proj(x)): the whole MLP in one
    fused_mlp launch at a shape its files were tuned at (eager, inference, plain Linears without
    bias), else the gate product in one swiglu launch between the model's own projections."""
    gate, up, down, act = module.gate_proj, module.up_proj, module.down_proj, module.act_fn
    silu = (type(act).__module__, type(act).__name__) in _SILU
    if not silu or (_SWIGLU is None and _FUSED_MLP is None) or _grad(x):
        return down(act(gate(x)) * up(x))
    if _FUSED_MLP is not None and not torch.compiler.is_compiling() and not torch.is_grad_enabled() \
            and type(x) is torch.Tensor and _plain_linears(gate, up, down):
        y = _fused_call(_FUSED_MLP, module, x, gate, up, down)
        if y is not None:
            return y
    g, u = gate(x), up(x)
    if _SWIGLU is None or _grad(g, u):
        return down(act(g) * u)
    return down((_SWIGLU if _traced(g) else _EAGER["swiglu"])(g, u))


def gate_up_mlp(module, x):
    """module(x) for an MLP of Phi3MLP's form, down_proj(up * activation_fn(gate)) with gate and up
    the halves of gate_up_proj(x): the gate product in one swiglu launch that reads the two halves
    where the projection wrote them, between the model's own projections."""
    compiling = torch.compiler.is_compiling()
    gate_up, down, act = _gate_up_parts(module, compiling)
    if gate_up is None or down is None or act is None:
        raise TypeError(f"GateUpMLP serves an MLP with gate_up_proj, down_proj and activation_fn (Phi3MLP's form); "
                        f"{type(module).__name__} lacks some: give its class the layer name GatedMLP "
                        "(gate_proj, up_proj, down_proj, act_fn) or none")
    # A projection whose weight is of another dtype than x (autocast, a quantized Linear) projects
    # as PyTorch decides for it: the module's own math, as rms_norm does for a weight of another dtype.
    weight = getattr(gate_up, "weight", None)
    if _GATE_UP is None or (type(act).__module__, type(act).__name__) not in _SILU or _grad(x) \
            or (isinstance(weight, torch.Tensor) and weight.dtype != x.dtype):
        return gate_up_mlp_math(x, gate_up, down, act)
    # probing False: a call whose projection trains gets the model's product, not None.
    return _gate_up_forward(x, gate_up, down, act, _GATE_UP, _EAGER["swiglu"], compiling, torch.is_grad_enabled(),
                            False)


def gate_up_mlp_math(x, gate_up, down, act):
    """transformers' Phi3MLP.forward."""
    gate, up = gate_up(x).chunk(2, dim=-1)
    return down(up * act(gate))


def rotary(q, k, cos, sin, unsqueeze_dim=1):
    """apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim) as transformers defines it: q and k in
    one rotary_embedding launch where the tables are [batch, seq, head_dim] (or [seq, head_dim])
    unsqueezed at the heads' dimension."""
    if _ROTARY is None or unsqueeze_dim != 1 or not 2 <= cos.dim() <= 3 or _grad(q, k):
        return rotary_math(q, k, cos, sin, unsqueeze_dim)
    return (_ROTARY if _traced(q) else _EAGER["rotary_embedding"])(q, k, cos, sin)


class _TablesTarget:
    """What the first-call check names when a model's rotary class disagrees with the op."""
    op = "rotary_tables"

    def __init__(self, cls):
        self.name = f"{cls.__module__}.{cls.__qualname__}.forward"


# The model's rotary class -> its forward as our patch replaces it: checked against the class's
# own on its first eager call (a disagreement leaves the class's own for good, said once), fp32
# tables where the class makes them (OLMo2), the class's own for the rope types whose inv_freq
# changes with the sequence and under compilation.
_TABLES_FORWARD = {}


def rotary_tables(module, x, position_ids):
    """module(x, position_ids) for a rotary-embedding module: the step's cos and sin tables in one
    rotary_tables call, where transformers makes a dozen PyTorch calls before the first layer."""
    cls = type(module)
    forward = _TABLES_FORWARD.get(cls)
    if forward is None:
        if _TABLES is None:
            return cls.forward(module, x, position_ids)
        make, learn = _rotary_tables(_TABLES)
        forward = _TABLES_FORWARD[cls] = _checked_on_first_call(_TablesTarget(cls), cls.forward, make, learn)
    return forward(module, x, position_ids)


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotary_math(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


class RMSNorm(nn.Module):
    """For transformers' RMSNorm modules (its layer name "RMSNorm")."""
    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states):
        return rms_norm(self, hidden_states)


class GatedMLP(nn.Module):
    """For a gated MLP module (LlamaMLP, Qwen3MLP and their kin)."""
    can_torch_compile = True
    has_backward = False

    def forward(self, x):
        return gated_mlp(self, x)


class GateUpMLP(nn.Module):
    """For a gated MLP that projects gate and up in one Linear (Phi3MLP and its kin)."""
    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states):
        return gate_up_mlp(self, hidden_states)


class RotaryPosEmb(nn.Module):
    """For transformers' apply_rotary_pos_emb (its layer name "rotary_pos_emb")."""
    can_torch_compile = True
    has_backward = False

    def forward(self, q, k, cos, sin, unsqueeze_dim=1):
        return rotary(q, k, cos, sin, unsqueeze_dim)


class RotaryEmbedding(nn.Module):
    """For a model's rotary-embedding module (LlamaRotaryEmbedding, Qwen3RotaryEmbedding and their
    kin; its layer name "RotaryEmbedding")."""
    can_torch_compile = True
    has_backward = False

    def forward(self, x, position_ids):
        return rotary_tables(self, x, position_ids)


# The layer mapping: layer name (a model class's kernel_layer_name, a key of use_kernel_mapping's
# mapping) -> the class here that serves it (LocalLayerRepository(DIR, layer_name=...)).
LAYER_NAMES = {"RMSNorm": "RMSNorm", "GatedMLP": "GatedMLP", "GateUpMLP": "GateUpMLP",
               "RotaryEmbedding": "RotaryEmbedding", "rotary_pos_emb": "RotaryPosEmb"}
# transformers' MLP classes of Phi3MLP's form: one gate_up_proj whose halves are gate and up, and an
# activation_fn on gate. GLM's and GLM-4's are written out in full, not derived from Phi3MLP.
GATE_UP_MLPS = frozenset({"Phi3MLP", "GlmMLP", "Glm4MLP"})


def layer_name(cls):
    """The layer name a model class takes (replace_kernel_forward_from_hub(cls, name): transformers
    names none but its RMSNorm classes'), by the class's name, or None for a class no layer serves:
    a *MLP is GateUpMLP where it is of Phi3MLP's form (its class or a base in GATE_UP_MLPS), else
    GatedMLP (gate_proj, up_proj, down_proj, act_fn)."""
    name = cls.__name__
    if name.endswith("RMSNorm"):
        return "RMSNorm"
    if name.endswith("MLP"):
        return "GateUpMLP" if any(c.__name__ in GATE_UP_MLPS for c in cls.__mro__) else "GatedMLP"
    if name.endswith("RotaryEmbedding"):
        return "RotaryEmbedding"
    return None
