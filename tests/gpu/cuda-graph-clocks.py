#!/usr/bin/env python3
"""Why a CUDA-graph replay of an example model's step can be slower than its eager step: times
eager steps and graph replays in alternating phases while nvidia-smi samples the SM clock, the
power and the throttle reasons every 50 ms; then the kernels of a step of each under a GPU-only
profiler; and what the model passes to scaled_dot_product_attention eagerly and while captured.

usage: tests/gpu/cuda-graph-clocks.py [MODEL]     (default hf_llama: examples/models/MODEL.py, fp16)
"""
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, "examples/models")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SAMPLES = []
SDPA_CALLS = []


def sample_gpu(stop):
    query = "--query-gpu=clocks.sm,power.draw,clocks_event_reasons.active"
    p = subprocess.Popen(["nvidia-smi", query, "--format=csv,noheader,nounits", "-lms", "50"],
                         stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        SAMPLES.append((time.time(), [f.strip() for f in line.split(",")]))
        if stop.is_set():
            break
    p.kill()


def spy_on_sdpa():
    """Records, for each SDPA call, whether a graph was being captured, the mask's shape, is_causal."""
    original = F.scaled_dot_product_attention

    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kw):
        SDPA_CALLS.append((torch.cuda.is_current_stream_capturing(),
                           None if attn_mask is None else tuple(attn_mask.shape), is_causal))
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kw)
    F.scaled_dot_product_attention = sdpa
    try:
        import transformers.integrations.sdpa_attention as hf_sdpa
        hf_sdpa.torch.nn.functional.scaled_dot_product_attention = sdpa
    except ImportError:
        pass


def phase(name, fn, steps, gap_ms=0):
    t0, times = time.time(), []
    with torch.inference_mode():
        for _ in range(steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
            if gap_ms:
                time.sleep(gap_ms / 1000)
    mine = [f for t, f in SAMPLES if t0 <= t <= time.time()]
    clock = statistics.median(float(f[0]) for f in mine) if mine else 0
    power = statistics.median(float(f[1]) for f in mine) if mine else 0
    reasons = sorted({f[2] for f in mine})
    print(f"{name:26s} median {statistics.median(times):7.3f} ms (min {min(times):7.3f}); "
          f"SM clock median {clock:5.0f} MHz, power {power:4.0f} W, throttle reasons {reasons}", flush=True)


def kernels_per_step(fn, steps=20, top=5):
    with torch.inference_mode():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                fn()
            torch.cuda.synchronize()
    total = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            total[e.name] = total.get(e.name, 0) + (getattr(e, "device_time", None) or getattr(e, "cuda_time", 0))
    ranked = sorted(total.items(), key=lambda kv: -kv[1])[:top]
    return sum(total.values()) / steps / 1000, [(n[:70], round(us / steps, 1)) for n, us in ranked]


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "hf_llama"
    spy_on_sdpa()
    module = __import__(name)
    torch.manual_seed(0)
    model, inputs = module.build(torch.float16)
    step = lambda: model(*inputs)  # noqa: E731
    with torch.inference_mode():
        step()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
    for capturing in (False, True):
        calls = [c for c in SDPA_CALLS if c[0] == capturing]
        print(f"SDPA {'while captured' if capturing else 'eager'}: {len(calls)} calls, "
              f"mask {calls[0][1] if calls else None}, is_causal {calls[0][2] if calls else None}")
    stop = threading.Event()
    sampler = threading.Thread(target=sample_gpu, args=(stop,))
    sampler.start()
    time.sleep(0.5)
    for _ in range(2):
        phase("eager", step, 150)
        phase("graph replay", graph.replay, 150)
        phase("graph replay, 5 ms gaps", graph.replay, 100, 5)
    stop.set()
    sampler.join(timeout=2)
    for label, fn in (("eager", step), ("graph replay", graph.replay)):
        ms, top = kernels_per_step(fn)
        print(f"{label}: kernels {ms:.3f} ms a step; the largest {top}", flush=True)


if __name__ == "__main__":
    main()
