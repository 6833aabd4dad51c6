"""A LLaMA-like stack (8 blocks, d=2048, 16 heads, SwiGLU MLP to 5632, RMSNorm, rotary embedding),
random weights, forward passes on the GPU. A profiling target for `autokernel profile`:

    autokernel profile --modules --warmup-s 1 --out llama.json -- python3 examples/models/llama_block.py

and a model file for `autokernel verify` (build(dtype) below).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, HIDDEN, LAYERS, BATCH, SEQ = 2048, 16, 5632, 8, 4, 2048


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """RoPE in the rotate-half convention; the name transformers gives it, which autokernel's module
    hook and its exported package both recognise."""
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Block(nn.Module):
    def __init__(self, d, heads, hidden):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.Parameter(torch.ones(d)), nn.Parameter(torch.ones(d))
        self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        h = F.rms_norm(x, (d,), self.n1, eps=1e-6)
        q, k, v = self.qkv(h).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, d))
        h = F.rms_norm(x, (d,), self.n2, eps=1e-6)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Stack(nn.Module):
    def __init__(self, d=D, heads=HEADS, hidden=HIDDEN, layers=LAYERS, seq=SEQ):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d, heads, hidden) for _ in range(layers))
        pos = torch.arange(seq, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, d // heads, 2, dtype=torch.float32) / (d // heads)))
        ang = torch.outer(pos, inv)
        self.register_buffer("cos", torch.cat((ang.cos(), ang.cos()), dim=-1), persistent=False)
        self.register_buffer("sin", torch.cat((ang.sin(), ang.sin()), dim=-1), persistent=False)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin)
        return x


def build(dtype):
    """The model and its input for `autokernel verify`: the same weights in every dtype."""
    model = Stack().cuda().to(dtype).eval()
    return model, (torch.randn(BATCH, SEQ, D, device="cuda").to(dtype),)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (x0,) = build(dtype_of(args.dtype))
    run(lambda: model(x0), args, f"llama-like {LAYERS} blocks, batch {BATCH} x {SEQ}")
