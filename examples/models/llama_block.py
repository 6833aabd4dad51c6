"""A LLaMA-like stack (8 blocks, d=2048, 16 heads, SwiGLU MLP to 5632, RMSNorm, rotary embedding),
random weights, forward passes on the GPU. A profiling target for `autokernel profile`:

    autokernel profile --warmup-s 1 --out llama.json -- python3 examples/models/llama_block.py --nvtx
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from common import dtype_of, parse_args, run


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


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
        h = F.rms_norm(x, (d,), self.n1)
        q, k, v = self.qkv(h).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, d))
        h = F.rms_norm(x, (d,), self.n2)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


if __name__ == "__main__":
    args = parse_args(__doc__)
    torch.manual_seed(0)
    dt = dtype_of(args.dtype)
    d, heads, hidden, layers, batch, seq = 2048, 16, 5632, 8, 4, 2048
    blocks = nn.ModuleList(Block(d, heads, hidden) for _ in range(layers)).cuda().to(dt).eval()
    pos = torch.arange(seq, device="cuda", dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, d // heads, 2, device="cuda", dtype=torch.float32) / (d // heads)))
    ang = torch.outer(pos, inv)
    cos, sin = (torch.cat((f(ang), f(ang)), dim=-1).to(dt) for f in (torch.cos, torch.sin))
    x0 = torch.randn(batch, seq, d, device="cuda", dtype=dt)

    def step():
        x = x0
        for blk in blocks:
            x = blk(x, cos, sin)
        return x

    run(step, args, f"llama-like {layers} blocks, batch {batch} x {seq}")
