#!/usr/bin/env python3
"""PyTorch's times for the nine kernel types at their benchmark shapes (fp16), on this GPU.

Eager and torch.compile(mode="max-autotune-no-cudagraphs"), each timed two ways, L2 flushed
before every call as our harness does:
  median_us, p10_us, p90_us   triton.testing.do_bench: CUDA events around each call (what
                              PyTorch users quote; it includes the events' own overhead)
  kernel_us                   the median over 30 calls of the summed GPU durations of the call's
                              kernels, from torch.profiler's CUPTI records: the same measure as
                              our harness's latency (CUPTI kernel time), gaps between kernels left out
One JSON object a line:
  {"type": "softmax", "variant": "eager", "median_us": ..., "kernel_us": ..., "what": "torch.softmax"}
Run it in the same GPU call as the loop it is compared with: a ratio means something only there.
PyTorch is used to measure baselines only; autokernel does not depend on it.
Usage: pytorch-baselines.py [TYPE...]   (default: all nine)
       TYPE may be rmsnorm@RxC: rmsnorm at another shape (a decoder's q/k norm: rmsnorm@65536x128)
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


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(q, k, cos, sin):
    """transformers' apply_rotary_pos_emb: the rotary spec's version 2 at its benchmark shape."""
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s


def swiglu(x, wg, wu, wd):
    return (F.silu(x @ wg) * (x @ wu)) @ wd


def cases():
    """type -> (what, eager fn, fn to compile or None, args)"""
    n = 8192
    x = rand(n, n)
    xr = rand(16384, 4096)
    w, b = torch.rand(n, device=dev, dtype=f16) + 0.5, rand(n) * 0.5
    logits, target = rand(8192, 32768), torch.randint(0, 32768, (8192,), device=dev)
    # The rotary spec's benchmark shape 2 x 32 x 8 x 2048 x 128, layout 1: q and k as transposed
    # views of the projections, cos and sin per batch.
    q, k = rand(2, 2048, 32, 128).transpose(1, 2), rand(2, 2048, 8, 128).transpose(1, 2)
    cos, sin = rand(2, 2048, 128), rand(2, 2048, 128)
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
        "reduce": ("x.sum(-1)", lambda: torch.sum(xr, -1), lambda: torch.sum(xr, -1)),
        "rotary_embedding": ("apply_rotary_pos_emb(q, k, cos, sin)", lambda: apply_rotary(q, k, cos, sin),
                             lambda: apply_rotary(q, k, cos, sin)),
        "matmul": ("a @ b (cuBLAS)", lambda: a @ bm, None),
        "flash_attention": ("SDPA causal", lambda: F.scaled_dot_product_attention(qa, ka, va, is_causal=True), None),
        "fused_mlp": ("(silu(x wg) * (x wu)) wd", lambda: swiglu(xm, wg, wu, wd), lambda: swiglu(xm, wg, wu, wd)),
    }


def row_norm_case(name):
    """rmsnorm@RxC: F.rms_norm over rows of C, eager, and the formula compiled, as in cases()."""
    rows, cols = (int(v) for v in name.split("@", 1)[1].split("x"))
    x, w = rand(rows, cols), torch.rand(cols, device=dev, dtype=f16) + 0.5
    return (f"F.rms_norm over {rows} rows of {cols}", lambda: F.rms_norm(x, (cols,), w, 1e-6),
            lambda: rms_formula(x, w))


def time_us(fn):
    p10, p50, p90 = do_bench(fn, warmup=25, rep=200, quantiles=[0.1, 0.5, 0.9])
    return p50 * 1e3, p10 * 1e3, p90 * 1e3


FLUSH = None


def kernel_us(fn, calls=30):
    """Median of the summed CUPTI durations of fn's kernels, one L2 flush before each call."""
    global FLUSH
    if FLUSH is None:
        FLUSH = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=dev)
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            FLUSH.zero_()
            fn()
        torch.cuda.synchronize()
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                     key=lambda e: e.time_range.start)
    flush_name = kernels[0].name   # the first kernel of the trace is a flush
    per_call, current = [], None
    for e in kernels:
        if e.name == flush_name:
            if current is not None:
                per_call.append(current)
            current = 0.0
        elif current is not None:
            current += e.time_range.elapsed_us()
    if current is not None:
        per_call.append(current)
    per_call.sort()
    return per_call[len(per_call) // 2] if per_call else float("nan")


def main():
    wanted = sys.argv[1:] or None
    chosen = cases()
    for name in wanted or []:
        if name.startswith("rmsnorm@"):
            chosen[name] = row_norm_case(name)
    for name, (what, eager, to_compile) in chosen.items():
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
            try:
                kern = round(kernel_us(fn), 2)
            except Exception as e:  # the profiler's API moves between releases: say so, keep do_bench's number
                print(f"kernel_us of {name} {variant}: {e!r}", file=sys.stderr)
                kern = None
            print(json.dumps({"type": name, "variant": variant, "what": what, "median_us": round(med, 2),
                              "p10_us": round(p10, 2), "p90_us": round(p90, 2), "kernel_us": kern,
                              "seconds": round(time.time() - started, 1)}), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
