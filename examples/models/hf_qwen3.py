"""A Hugging Face `transformers` Qwen3 built from a config (8 layers, d=2048, 16 heads of 128 of which
4 are key/value heads: grouped-query attention, MLP to 6144, vocabulary 32000), random weights
(nothing is downloaded), batch 2 x 2048. Each attention normalises q and k per head before the
rotary embedding (Qwen3's qk-norm: RMSNorms over rows of 128, at 65536 x 128 and 16384 x 128 a
step), besides the decoder's norms over rows of 2048: one kernel type at two very different
shapes. A model no autokernel file was tuned for. A profiling target:

    autokernel profile --modules --warmup-s 2 --out hf-qwen3.json -- python3 examples/models/hf_qwen3.py

and a model file for `autokernel verify` (build(dtype) below). Needs `pip install transformers`
(Qwen3 is in transformers 4.51 and later).
"""
import torch

BATCH, SEQ = 2, 2048


def build(dtype):
    """The model and its input for `autokernel verify`: the same weights in every dtype."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(hidden_size=2048, intermediate_size=6144, num_hidden_layers=8, num_attention_heads=16,
                         num_key_value_heads=4, head_dim=128, vocab_size=32000, max_position_embeddings=SEQ,
                         rms_norm_eps=1e-6, attn_implementation="sdpa", use_cache=False)
    model = Qwen3ForCausalLM(config).cuda().to(dtype).eval()
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), device="cuda")
    return model, (ids,)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (ids,) = build(dtype_of(args.dtype))
    run(lambda: model(ids, use_cache=False), args, f"transformers Qwen3 8 layers, GQA 16/4, qk-norm, batch {BATCH} x {SEQ}")
