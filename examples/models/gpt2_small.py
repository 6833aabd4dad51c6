"""A GPT-2-small-like model (12 layers, d=768, 12 heads, vocabulary 50257), random weights, forward
passes with a cross-entropy loss, on the GPU. A profiling target for `autokernel profile`:

    autokernel profile --warmup-s 1 --out gpt2.json -- python3 examples/models/gpt2_small.py --nvtx

and a model file for `autokernel verify` (build(dtype) below; its output is the loss).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT2(nn.Module):
    def __init__(self, vocab=50257, d=768, layers=12, heads=12, context=1024):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))


def build(dtype):
    """The model and its inputs for `autokernel verify`: the same weights in every dtype."""
    model = GPT2().cuda().to(dtype).eval()
    idx = torch.randint(0, 50257, (8, 1024), device="cuda")
    targets = torch.randint(0, 50257, (8, 1024), device="cuda")
    return model, (idx, targets)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (idx, targets) = build(dtype_of(args.dtype))
    run(lambda: model(idx, targets), args, "gpt2-small batch 8 x 1024")
