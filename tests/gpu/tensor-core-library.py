#!/usr/bin/env python3
"""The libraries' times at the tensor-core types' shapes, timed as autokernel times a candidate.

cuBLAS (a @ b), SDPA (cuDNN's flash attention, causal) and the SwiGLU MLP eager and under
torch.compile, fp16 and bf16, on this GPU. kernel_us is the median over 30 calls of the summed
CUPTI durations of each call's kernels (torch.profiler), one L2 flush before each call: the
measure autokernel's harness takes of a candidate. median_us is triton's do_bench (CUDA events).
One JSON object a line:
  {"type": "matmul", "shape": [4096, 4096, 4096], "dtype": "fp16", "what": "cuBLAS", "kernel_us": ..., "median_us": ...}
Run it in the same GPU call as `autokernel bench` of the files it is compared with.
Usage: tensor-core-library.py [matmul|flash_attention|fused_mlp ...]
"""
import importlib.util
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("baselines", os.path.join(HERE, "pytorch-baselines.py"))
baselines = importlib.util.module_from_spec(spec)
spec.loader.exec_module(baselines)

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
MATMUL_SHAPES = [(4096, 4096, 4096), (4096, 2048, 5632), (4096, 5632, 2048), (4096, 2048, 2048)]


def rand(*shape, dtype, scale=1.0):
    return torch.randn(*shape, device="cuda", dtype=dtype) * scale


def swiglu(x, wg, wu, wd):
    return (F.silu(x @ wg) * (x @ wu)) @ wd


def cases(dtype):
    """(type, shape, what, fn) for one dtype; tensors made lazily so one case's memory goes first."""
    for m, n, k in MATMUL_SHAPES:
        def mm(m=m, n=n, k=k):
            a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype, scale=k ** -0.5)
            return lambda: a @ b
        yield "matmul", [m, n, k], "cuBLAS", mm
    def sdpa():
        q, k, v = (rand(4, 32, 4096, 128, dtype=dtype) for _ in range(3))
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    yield "flash_attention", [4, 32, 4096, 128], "SDPA", sdpa
    def mlp(compiled):
        x = rand(4096, 4096, dtype=dtype)
        wg, wu = rand(4096, 11008, dtype=dtype, scale=4096 ** -0.5), rand(4096, 11008, dtype=dtype, scale=4096 ** -0.5)
        wd = rand(11008, 4096, dtype=dtype, scale=11008 ** -0.5)
        fn = torch.compile(swiglu, mode="max-autotune-no-cudagraphs") if compiled else swiglu
        return lambda: fn(x, wg, wu, wd)
    yield "fused_mlp", [4096, 4096, 11008], "eager", lambda: mlp(False)
    yield "fused_mlp", [4096, 4096, 11008], "torch.compile", lambda: mlp(True)


def main():
    wanted = set(sys.argv[1:])
    for dname, dtype in DTYPES.items():
        for kind, shape, what, make in cases(dtype):
            if wanted and kind not in wanted:
                continue
            fn = make()
            fn()
            med, p10, p90 = baselines.time_us(fn)
            print(json.dumps({"type": kind, "shape": shape, "dtype": dname, "what": what,
                              "kernel_us": round(baselines.kernel_us(fn), 2), "median_us": round(med, 2),
                              "p10_us": round(p10, 2), "p90_us": round(p90, 2)}), flush=True)
            del fn
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
