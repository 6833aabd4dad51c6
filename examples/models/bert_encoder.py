"""A BERT-base-like encoder (12 layers, d=768, 12 heads, GELU MLP to 3072, post-LayerNorm, attention
with an explicit softmax), random weights, batch 16 x 512. A profiling target:

    autokernel profile --modules --warmup-s 1 --out bert.json -- python3 examples/models/bert_encoder.py

and a model file for `autokernel verify` (build(dtype) below): its LayerNorm and softmax are what
the exported layernorm and softmax ops replace.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, HIDDEN, LAYERS, VOCAB, BATCH, SEQ = 768, 12, 3072, 12, 30522, 16, 512


class Layer(nn.Module):
    def __init__(self, d, heads, hidden):
        super().__init__()
        self.heads = heads
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.fc, self.out = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        p = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.heads), dim=-1)
        x = self.ln1(x + self.o((p @ v).transpose(1, 2).reshape(b, t, d)))
        return self.ln2(x + self.out(F.gelu(self.fc(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, D), nn.Embedding(SEQ, D)
        self.ln = nn.LayerNorm(D, eps=1e-12)
        self.layers = nn.ModuleList(Layer(D, HEADS, HIDDEN) for _ in range(LAYERS))

    def forward(self, ids):
        x = self.ln(self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device)))
        for layer in self.layers:
            x = layer(x)
        return x


def build(dtype):
    """The model and its input for `autokernel verify`: the same weights in every dtype."""
    model = Encoder().cuda().to(dtype).eval()
    return model, (torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda"),)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (ids,) = build(dtype_of(args.dtype))
    run(lambda: model(ids), args, f"bert-like encoder {LAYERS} layers, batch {BATCH} x {SEQ}")
