"""A Hugging Face `transformers` OLMo2 built from a config (8 layers, d=2048, 16 heads of 128, MLP to
8192, vocabulary 32000), random weights (nothing is downloaded), batch 2 x 2048. OLMo2 normalises q
and k over the whole projection (an RMSNorm whose row is heads x head_dim, 2048 here), multiplies
its norms' weight in fp32, and keeps its rotary tables in fp32: q and k in fp16 or bf16 are rotated
by fp32 cos and sin and rounded back. A model no autokernel file was tuned for. A profiling target:

    autokernel profile --modules --warmup-s 2 --out hf-olmo2.json -- python3 examples/models/hf_olmo2.py

and a model file for `autokernel verify` (build(dtype) below). Needs `pip install transformers`.
"""
import torch

BATCH, SEQ = 2, 2048


def build(dtype):
    """The model and its input for `autokernel verify`: the same weights in every dtype."""
    from transformers import Olmo2Config, Olmo2ForCausalLM

    config = Olmo2Config(hidden_size=2048, intermediate_size=8192, num_hidden_layers=8, num_attention_heads=16,
                         num_key_value_heads=16, vocab_size=32000, max_position_embeddings=SEQ, rms_norm_eps=1e-6,
                         attn_implementation="sdpa", use_cache=False)
    model = Olmo2ForCausalLM(config).cuda().to(dtype).eval()
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), device="cuda")
    return model, (ids,)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (ids,) = build(dtype_of(args.dtype))
    run(lambda: model(ids, use_cache=False), args, f"transformers OLMo2 8 layers, qk-norm over the projection, batch {BATCH} x {SEQ}")
