"""A Hugging Face `transformers` Phi-3 built from a config (8 layers, d=2048, 16 heads of 128, MLP to
5632, vocabulary 32064), random weights (nothing is downloaded), batch 2 x 2048. Its MLP projects
gate and up in one fused Linear (gate_up_proj) and its attention q, k and v in one (qkv_proj), so
its rotary helper gets q and k as slices of one projection. A model no autokernel file was tuned
for. A profiling target:

    autokernel profile --modules --warmup-s 2 --out hf-phi3.json -- python3 examples/models/hf_phi3.py

and a model file for `autokernel verify` (build(dtype) below). Needs `pip install transformers`.
"""
import torch

BATCH, SEQ = 2, 2048


def build(dtype):
    """The model and its input for `autokernel verify`: the same weights in every dtype."""
    from transformers import Phi3Config, Phi3ForCausalLM

    config = Phi3Config(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=16,
                        num_key_value_heads=16, vocab_size=32064, max_position_embeddings=SEQ,
                        original_max_position_embeddings=SEQ, rms_norm_eps=1e-5,
                        attn_implementation="sdpa", use_cache=False)
    model = Phi3ForCausalLM(config).cuda().to(dtype).eval()
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), device="cuda")
    return model, (ids,)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (ids,) = build(dtype_of(args.dtype))
    run(lambda: model(ids, use_cache=False), args, f"transformers Phi-3 8 layers, fused qkv and gate_up, batch {BATCH} x {SEQ}")
