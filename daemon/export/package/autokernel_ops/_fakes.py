"""Each op's fake implementation: the shapes and dtypes of its outputs, computed without running
anything, which is what torch.compile traces through."""
import torch

def _dense_like(x):
    """What the op allocates (ops/rotary_embedding.cpp's dense_strides): dense, in x's order of
    dimensions, largest stride outermost, dimensions of size 1 left in place; the fake must give
    the very strides the op returns."""
    places = [d for d in range(x.dim()) if x.shape[d] != 1]
    order = list(range(x.dim()))
    for place, d in zip(places, sorted(places, key=lambda d: -x.stride(d))):
        order[place] = d
    y = x.new_empty([x.shape[d] for d in order])
    return y.permute([order.index(d) for d in range(x.dim())])


FAKES = {
    "rmsnorm": lambda x, weight, eps: torch.empty_like(x),
    "layernorm": lambda x, weight, bias, eps: torch.empty_like(x),
    "softmax": lambda x: torch.empty_like(x),
    "reduce": lambda x: x.new_empty(x.shape[:-1]),
    "swiglu": lambda gate, up: torch.empty_like(gate),
    "rotary_embedding": lambda q, k, cos, sin: (_dense_like(q), _dense_like(k)),
    "cross_entropy": lambda logits, target: (logits.new_empty(logits.shape[:1]), logits.new_empty(())),
    "matmul": lambda x, weight, bias: x.new_empty((*x.shape[:-1], weight.shape[0])),
    "fused_mlp": lambda x, w_gate, w_up, w_down: torch.empty_like(x, memory_format=torch.contiguous_format),
    # o dense in q's order, as the op allocates it and lays out SDPA's result where it falls back.
    "flash_attention": lambda q, k, v, causal: _dense_like(q),
}


# The ops of files written for an older version of their type's contract (manifest.json's
# contract_version), by (type, version).
OLDER_FAKES = {
    ("rotary_embedding", 1): lambda q, cos, sin: torch.empty_like(q, memory_format=torch.contiguous_format),
    ("flash_attention", 1): lambda q, k, v: torch.empty_like(q, memory_format=torch.contiguous_format),
}


def register(qualified_name, types, versions=None):
    """Registers the fakes of `types`; qualified_name("rmsnorm") is the op's "namespace::name",
    versions {type: contract version} (the newest where absent)."""
    for t in types:
        fake = OLDER_FAKES.get((t, (versions or {}).get(t)), FAKES[t])
        torch.library.register_fake(qualified_name(t))(fake)
