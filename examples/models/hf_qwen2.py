"""A Hugging Face `transformers` Qwen2 built from a config (8 layers, d=2048, 16 heads of which 2 are
key/value heads: grouped-query attention, MLP to 5632, vocabulary 32000), random weights (nothing is
downloaded), batch 2 x 2048. Its q, k and v projections carry biases and its rotary helper gets q
and k with different head counts: a model no autokernel file was tuned for. A profiling target:

    autokernel profile --modules --warmup-s 2 --out hf-qwen2.json -- python3 examples/models/hf_qwen2.py

and a model file for `autokernel verify` (build(dtype) below). Needs `pip install transformers`.
"""
import torch

BATCH, SEQ = 2, 2048


def build(dtype):
    """The model and its input for `autokernel verify`: the same weights in every dtype."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=16,
                         num_key_value_heads=2, vocab_size=32000, max_position_embeddings=SEQ, rms_norm_eps=1e-6,
                         attn_implementation="sdpa", use_cache=False)
    model = Qwen2ForCausalLM(config).cuda().to(dtype).eval()
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), device="cuda")
    return model, (ids,)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (ids,) = build(dtype_of(args.dtype))
    run(lambda: model(ids, use_cache=False), args, f"transformers Qwen2 8 layers, GQA 16/2, batch {BATCH} x {SEQ}")
