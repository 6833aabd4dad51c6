"""A small decoder as transformers writes one (for the export's tensor-core GPU test): 2 layers of
RMSNorm, grouped-query attention with q/k/v/o projections (16 query heads of 128 over 4 key/value
heads, Qwen3's ratio; causal SDPA on the projections' transposed views with enable_gqa, as
transformers calls it) and a gated MLP class, DecoderMLP, down_proj(act_fn(gate_proj(x)) *
up_proj(x)) with nn.SiLU, hidden 2048, MLP to 6144, batch 2 x 2048 tokens: its q and o projections
are the Qwen3 Linear GEMMs [4096, 2048, 2048], its k and v [4096, 512, 2048], its MLP [4096, 2048,
6144] and its attention flash_attention's 2x16x4x2048x128 causal, layout 2. The LM head [4096,
1024, 2048] and the k and v projections are tuned by no file, so PyTorch's runs there.
Random weights, seeded by the caller (verify seeds 0 before each build). build(dtype) is the model
file interface of `autokernel verify`."""
import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, KV_HEADS, HIDDEN, LAYERS, BATCH, SEQ, VOCAB = 2048, 16, 4, 6144, 2, 2, 2048, 1024
HEAD_DIM = D // HEADS


class DecoderMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(D, HIDDEN, bias=False)
        self.up_proj = nn.Linear(D, HIDDEN, bias=False)
        self.down_proj = nn.Linear(HIDDEN, D, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj, self.o_proj = nn.Linear(D, D, bias=False), nn.Linear(D, D, bias=False)
        self.k_proj, self.v_proj = nn.Linear(D, KV_HEADS * HEAD_DIM, bias=False), nn.Linear(D, KV_HEADS * HEAD_DIM, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k, v = (p(x).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2) for p in (self.k_proj, self.v_proj))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=HEAD_DIM ** -0.5, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, D))


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = nn.Parameter(torch.ones(D)), nn.Parameter(torch.ones(D))
        self.attn, self.mlp = DecoderAttention(), DecoderMLP()

    def forward(self, x):
        x = x + self.attn(F.rms_norm(x, (D,), self.n1, 1e-6))
        return x + self.mlp(F.rms_norm(x, (D,), self.n2, 1e-6))


class TinyDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(DecoderLayer() for _ in range(LAYERS))
        self.norm = nn.Parameter(torch.ones(D))
        self.lm_head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(F.rms_norm(x, (D,), self.norm, 1e-6))


def build(dtype):
    """The model and its input for `autokernel verify`: the same weights in every dtype."""
    model = TinyDecoder().cuda().to(dtype).eval()
    return model, (torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda"),)
