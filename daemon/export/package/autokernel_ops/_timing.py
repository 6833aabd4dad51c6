"""How the package times a model step on the GPU: CUDA events around each step, after warm-up;
and a step replayed as a CUDA graph. Shared by verify.py and the compile decision."""
import statistics

import torch


def summary(times_ms):
    return {"median_ms": statistics.median(times_ms), "min_ms": min(times_ms), "max_ms": max(times_ms),
            "steps": len(times_ms)}


def time_steps(step, steps, warmup):
    """Milliseconds of each of `steps` calls of step(), CUDA events around each, after warm-up."""
    with torch.inference_mode():
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        times = []
        for _ in range(steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return summary(times)


def capture_graph(step, warmup=3):
    """(graph, output): one call of step() captured as a CUDA graph, after `warmup` calls on a side
    stream (which is where lazy initialisation, cuBLAS workspaces and the like, belongs), as
    torch.cuda.graph asks. Replaying the graph rewrites `output` in place."""
    with torch.inference_mode():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                step()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            output = step()
    return graph, output


def kernel_union_us(intervals):
    """The length of the union of [start, end) intervals (µs)."""
    total, reach = 0.0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def gpu_idle_per_step(trace_events, step_name):
    """From a Chrome trace (torch.profiler's export_chrome_trace, its "traceEvents"): for each
    range named step_name (a record_function around one step and its synchronize), the GPU's
    idle time inside the step: from its first kernel's start to its last kernel's end, minus the
    union of its kernels, copies and memsets. A kernel belongs to the step whose range holds its
    start (the profiler puts both on one clock). Returns [{"span_us", "busy_us", "idle_us"}]."""
    gpu = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in trace_events
           if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    steps = sorted((e["ts"], e["ts"] + e.get("dur", 0)) for e in trace_events
                   if e.get("ph") == "X" and e.get("name") == step_name and e.get("cat") != "gpu_user_annotation")
    out = []
    for lo, hi in steps:
        mine = [(s, e) for s, e in gpu if lo <= s < hi]
        if not mine:
            continue
        span = max(e for _, e in mine) - min(s for s, _ in mine)
        busy = kernel_union_us(mine)
        out.append({"span_us": span, "busy_us": busy, "idle_us": max(span - busy, 0.0)})
    return out
