"""A Hugging Face `transformers` LLaMA built from a config (8 layers, d=2048, 16 heads, MLP to
5632, vocabulary 32000), random weights (nothing is downloaded), batch 2 x 2048. Its RMSNorm is a
module of its own (LlamaRMSNorm) and its rotary embedding a helper function: the model code a user
has, not F.rms_norm. A profiling target:

    autokernel profile --modules --warmup-s 2 --out hf-llama.json -- python3 examples/models/hf_llama.py

and a model file for `autokernel verify` (build(dtype) below). Needs `pip install transformers`.
"""
import torch

BATCH, SEQ = 2, 2048


def build(dtype):
    """The model and its input for `autokernel verify`: the same weights in every dtype."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=16,
                         num_key_value_heads=16, vocab_size=32000, max_position_embeddings=SEQ, rms_norm_eps=1e-6,
                         attn_implementation="sdpa", use_cache=False)
    model = LlamaForCausalLM(config).cuda().to(dtype).eval()
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), device="cuda")
    return model, (ids,)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (ids,) = build(dtype_of(args.dtype))
    run(lambda: model(ids, use_cache=False), args, f"transformers LLaMA 8 layers, batch {BATCH} x {SEQ}")
