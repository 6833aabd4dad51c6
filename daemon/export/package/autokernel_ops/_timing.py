"""How the package times a model step on the GPU: CUDA events around each step, after warm-up;
and a step replayed as a CUDA graph. Shared by verify.py and the compile decision."""
import statistics
import time
import warnings

import torch


def summary(times_ms):
    return {"median_ms": statistics.median(times_ms), "min_ms": min(times_ms), "max_ms": max(times_ms),
            "steps": len(times_ms), "times_ms": list(times_ms)}


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


def host_ms(step, steps, warmup):
    """Milliseconds the CPU takes to issue each of `steps` calls of step(): from the call to its
    return, with the GPU's queue drained before each, so that a launch never waits for room. A
    step that issues in more time than its kernels take keeps the GPU waiting for the CPU."""
    with torch.inference_mode():
        for _ in range(warmup):
            step()
        times = []
        for _ in range(steps):
            torch.cuda.synchronize()
            start = time.perf_counter()
            step()
            times.append((time.perf_counter() - start) * 1000)
        torch.cuda.synchronize()
    return summary(times)


def host_syncs(step):
    """What in one call of step() made the CPU wait for the GPU (torch.cuda's sync debug mode): for
    each wait, the Python line that made it and the first line of the warning."""
    with torch.inference_mode(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            step()
        finally:
            torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize()
    return [f"{w.filename}:{w.lineno}: {str(w.message).splitlines()[0][:120]}" for w in caught
            if "synchroniz" in str(w.message) and "prototype" not in str(w.message)]


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


def _gpu_intervals(trace_events):
    return [(e["ts"], e["ts"] + e.get("dur", 0), e.get("name", "?")) for e in trace_events
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def gpu_busy_per_step(trace_events, steps, top=12):
    """From a Chrome trace of `steps` steps (torch.profiler's export_chrome_trace, its
    "traceEvents", GPU activity only): the GPU's busy time per step, the union of its kernels,
    copies and memsets over the trace divided by the steps (µs), and the `top` kernels by their
    time per step: {"busy_us", "kernels": [{"name", "us", "calls"}], "kernel_us"}.

    The trace records GPU activity only: recording every CPU op as well costs the CPU microseconds
    an op, which in an eager step is time the GPU waits, so an idle time read from such a trace
    says more about the profiler than about the step. The idle time is then the step's time
    measured without a profiler minus this busy time (verify.py)."""
    gpu = _gpu_intervals(trace_events)
    per_name = {}
    for start, end, name in gpu:
        us, calls = per_name.get(name, (0.0, 0))
        per_name[name] = (us + end - start, calls + 1)
    kernels = sorted(({"name": n, "us": us / steps, "calls": calls / steps} for n, (us, calls) in per_name.items()),
                     key=lambda k: -k["us"])
    return {"busy_us": kernel_union_us([(s, e) for s, e, _ in gpu]) / steps, "kernels": kernels[:top],
            "kernel_us": sum(k["us"] for k in kernels)}
