#!/usr/bin/env python3
"""PyTorch's times for the nine kernel types at their benchmark shapes (fp16), on this GPU.

Eager and torch.compile(mode="max-autotune-no-cudagraphs") medians of triton.testing.do_bench
(L2 flushed between runs, as our harness does), with p10 and p90. One JSON object a line:
  {"type": "softmax", "variant": "eager", "median_us": ..., "p10_us": ..., "p90_us": ..., "what": "torch.softmax"}
Run it in the same GPU call as the loop it is compared with: a ratio means something only there.
PyTorch is used to measure baselines only; autokernel does not depend on it.
Usage: pytorch-baselines.py [TYPE...]   (default: all nine)
"""
import json
import sys
import time

import torch
import torch.nn.functional as F
from triton.testing import do_bench

torch.manual_seed(0)
dev, f16 = "cuda", torch.float16


def rand(*shape, scale=1.0):
    return torch.randn(*shape, device=dev, dtype=f16) * scale


def rms_formula(x, w, eps=1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rotate_half_rope(q, cos, sin):
    half = q.shape[-1] // 2
    x1, x2 = q[..., :half], q[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def swiglu(x, wg, wu, wd):
    return (F.silu(x @ wg) * (x @ wu)) @ wd


def cases():
    """type -> (what, eager fn, fn to compile or None, args)"""
    n = 8192
    x = rand(n, n)
    w, b = torch.rand(n, device=dev, dtype=f16) + 0.5, rand(n) * 0.5
    logits, target = rand(8192, 32768), torch.randint(0, 32768, (8192,), device=dev)
    q = rand(4, 32, 4096, 128)
    cos, sin = rand(4096, 64), rand(4096, 64)
    a, bm = rand(4096, 4096), rand(4096, 4096, scale=4096 ** -0.5)
    qa, ka, va = rand(4, 32, 4096, 128), rand(4, 32, 4096, 128), rand(4, 32, 4096, 128)
    xm = rand(4096, 4096)
    wg, wu = rand(4096, 11008, scale=4096 ** -0.5), rand(4096, 11008, scale=4096 ** -0.5)
    wd = rand(11008, 4096, scale=11008 ** -0.5)
    return {
        "rmsnorm": ("F.rms_norm / the formula compiled", lambda: F.rms_norm(x, (n,), w, 1e-6), lambda: rms_formula(x, w)),
        "softmax": ("torch.softmax", lambda: torch.softmax(x, -1), lambda: torch.softmax(x, -1)),
        "layernorm": ("F.layer_norm", lambda: F.layer_norm(x, (n,), w, b), lambda: F.layer_norm(x, (n,), w, b)),
        "cross_entropy": ("F.cross_entropy", lambda: F.cross_entropy(logits, target), lambda: F.cross_entropy(logits, target)),
        "reduce": ("x.sum(-1)", lambda: torch.sum(rand_reduce, -1), lambda: torch.sum(rand_reduce, -1)),
        "rotary_embedding": ("q*cos + rotate_half(q)*sin", lambda: rotate_half_rope(q, cos, sin), lambda: rotate_half_rope(q, cos, sin)),
        "matmul": ("a @ b (cuBLAS)", lambda: a @ bm, None),
        "flash_attention": ("SDPA causal", lambda: F.scaled_dot_product_attention(qa, ka, va, is_causal=True), None),
        "fused_mlp": ("(silu(x wg) * (x wu)) wd", lambda: swiglu(xm, wg, wu, wd), lambda: swiglu(xm, wg, wu, wd)),
    }


rand_reduce = None


def time_us(fn):
    p10, p50, p90 = do_bench(fn, warmup=25, rep=200, quantiles=[0.1, 0.5, 0.9])
    return p50 * 1e3, p10 * 1e3, p90 * 1e3


def main():
    global rand_reduce
    rand_reduce = rand(16384, 4096)
    wanted = sys.argv[1:] or None
    for name, (what, eager, to_compile) in cases().items():
        if wanted and name not in wanted:
            continue
        for variant, fn in (("eager", eager), ("torch.compile", to_compile)):
            if fn is None:
                continue
            started = time.time()
            if variant == "torch.compile":
                fn = torch.compile(fn, mode="max-autotune-no-cudagraphs")
                fn()
            med, p10, p90 = time_us(fn)
            print(json.dumps({"type": name, "variant": variant, "what": what, "median_us": round(med, 2),
                              "p10_us": round(p10, 2), "p90_us": round(p90, 2),
                              "seconds": round(time.time() - started, 1)}), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
