"""What the example models share: timing, NVTX, and a torch.profiler table to compare with
`autokernel profile`. Random weights, no downloads."""
import argparse
import collections
import contextlib
import time

import torch


def parse_args(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=20, help="timed forward passes (after 3 warm-up passes)")
    p.add_argument("--nvtx", action="store_true", help="emit NVTX ranges with shapes (torch.autograd.profiler.emit_nvtx)")
    p.add_argument("--torch-profiler", action="store_true", help="print torch.profiler's kernel table for the timed steps")
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    return p.parse_args()


def dtype_of(name):
    return torch.float16 if name == "fp16" else torch.bfloat16


def run(model_step, args, label):
    with torch.no_grad():
        for _ in range(3):
            model_step()
        torch.cuda.synchronize()
        nvtx = torch.autograd.profiler.emit_nvtx(record_shapes=True) if args.nvtx else contextlib.nullcontext()
        prof = (torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
                if args.torch_profiler else contextlib.nullcontext())
        t0 = time.perf_counter()
        with prof, nvtx:
            for _ in range(args.steps):
                model_step()
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    print(f"{label}: {args.steps} steps in {dt * 1000:.1f} ms ({dt / args.steps * 1000:.2f} ms/step)")
    if args.torch_profiler:
        print_kernel_table(prof)


def print_kernel_table(prof, top=12):
    totals, calls = collections.Counter(), collections.Counter()
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = getattr(e, "device_time", None)
        if us is None:
            us = getattr(e, "cuda_time", 0)
        totals[e.name] += us
        calls[e.name] += 1
    whole = sum(totals.values()) or 1
    print(f"torch.profiler: {len(totals)} kernels, {whole / 1000:.1f} ms of GPU time")
    print(" rank  share   total ms   calls  name")
    for i, (name, us) in enumerate(totals.most_common(top), 1):
        print(f"{i:5d} {us / whole * 100:5.1f}% {us / 1000:10.3f} {calls[name]:7d}  {name[:110]}")
