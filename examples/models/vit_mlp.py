"""The MLP half of a ViT-B/16 encoder as timm builds it (12 blocks of LayerNorm, Linear 768 -> 3072,
an `nn.GELU()` module, Linear 3072 -> 768, residual), random weights, batch 64 x 197 tokens.

Its GELU is a module of none of autokernel's built-in types, which `plan --user-types` offers as a
user type (docs/user-types.md, "From a profile"):

    autokernel profile --modules --warmup-s 1 --out vit.json -- python3 examples/models/vit_mlp.py --nvtx
    autokernel plan vit.json --user-types types --write vit-run.toml
"""
import torch
import torch.nn as nn

D, HIDDEN, BLOCKS, BATCH, TOKENS = 768, 3072, 12, 64, 197


class Mlp(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)
        self.act = nn.GELU()

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


def build(dtype):
    """The model and its input for `autokernel verify`."""
    model = nn.Sequential(*(Mlp(D, HIDDEN) for _ in range(BLOCKS))).cuda().to(dtype).eval()
    return model, (torch.randn(BATCH, TOKENS, D, device="cuda", dtype=dtype),)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (x,) = build(dtype_of(args.dtype))
    run(lambda: model(x), args, f"ViT-B MLP stack, {BLOCKS} blocks, batch {BATCH} x {TOKENS}")
