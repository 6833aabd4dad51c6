"""The model runs behind `autokernel verify`: one model with and without the exported ops, against
its own fp32 output, and timed. Writes a JSON report; the verdict is autokernel's (the C++ side).

A model file follows one convention: it defines

    def build(dtype):            # torch.float32, float16 or bfloat16
        return model, inputs     # model(*inputs) is one step; same weights for every dtype

build is called with the seed set to 0 before each call, so a model that draws its weights at
random draws the same ones each time.

    python3 -m autokernel_ops.verify --model FILE --json OUT [--dtype fp16] [--steps 30] [--compile]
        [--compile-mode M] [--no-max-autotune] [--cuda-graphs] [--liger]

Besides the outputs and step times it measures what the op layer costs: the CPU time of one call of
each replacement (and of what it replaces) as the model calls it, and alone on the arguments the model
gives it, with the GPU time of the kernels each launches; and where a step's GPU time goes, with and without the ops: the
kernels that take the most, and the GPU's idle time (the step's time less the union of its kernels
in a trace of GPU activity only). --cuda-graphs also times both
replayed as a CUDA graph, and as autokernel_ops.capture runs it (CUDA graphs with attention on its
causal path). It counts, per replaced function, the calls an op served and by which exported file.
--liger times Liger-Kernel's patch for the model's family. --compile times torch.compile in each mode, takes the fastest, and decides
there which op types run under compilation (autokernel_ops.decide_for_compile).
"""
import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

import torch

import autokernel_ops
from autokernel_ops._graphs import CaptureError
from autokernel_ops._replacements import make_replacement
from autokernel_ops._served import file_tags, launches_of, serving_wrapper, shares_by_type
from autokernel_ops._timing import capture_graph, gpu_busy_per_step, host_ms, host_syncs, summary, time_steps

_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
_MODULE = "autokernel_verify_model"
_MODES = ("default", "max-autotune-no-cudagraphs", "reduce-overhead")


def load_model_file(path):
    spec = importlib.util.spec_from_file_location(_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "build", None)):
        raise SystemExit(f"{path}: defines no build(dtype) returning (model, inputs); see autokernel_ops/verify.py")
    return module


def first_tensor(out):
    """A model's output tensor: itself, the first of a tuple, or a Hugging Face output's logits."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if isinstance(out, (tuple, list)) and out:
        return first_tensor(out[0])
    if isinstance(out, dict) and out:
        return first_tensor(next(iter(out.values())))
    raise SystemExit(f"the model returned {type(out).__name__}, not a tensor, a tuple or an output with logits")


def build(module, dtype):
    torch.manual_seed(0)
    model, inputs = module.build(dtype)
    return model, tuple(inputs)


def run(model, inputs):
    with torch.inference_mode():
        return first_tensor(model(*inputs)).float()


def error(out, ref):
    """Relative L2 error and max abs difference against the fp32 output; inf when out is not finite."""
    finite = bool(torch.isfinite(out).all())
    diff = (out - ref).double()
    return {"rel_l2": float(diff.norm() / ref.double().norm().clamp_min(1e-30)) if finite else float("inf"),
            "max_abs": float(diff.abs().max()) if finite else float("inf"), "finite": finite}


def timed(model, inputs, ref, steps, warmup):
    """A row of the report: the output's error against fp32 and the step times."""
    return {**error(run(model, inputs), ref), **time_steps(lambda: model(*inputs), steps, warmup)}


def graph_row(model, inputs, ref, steps, warmup):
    """One step captured as a CUDA graph (after warm-up on a side stream), replayed and timed; its
    output's error. A step that cannot be captured is a row with the error."""
    try:
        graph, out = capture_graph(lambda: model(*inputs))
    except Exception as e:  # reported: a model (or an op) that does not capture
        torch.cuda.synchronize()
        return {"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"}
    row = time_steps(graph.replay, steps, warmup)
    graph.replay()
    torch.cuda.synchronize()
    row = {**error(first_tensor(out).float(), ref), **row}
    del graph, out
    torch.cuda.empty_cache()
    return row


def captured_row(model, inputs, ref, steps, warmup):
    """The step as autokernel_ops.capture makes it (CUDA graphs, attention kept on its causal path
    where the model is given no mask), replayed through its callable (inputs copied in), timed; its
    output's error, and whether the causal decision was installed. A step that cannot be captured
    is a row with the error."""
    try:
        step = autokernel_ops.capture(model, inputs)
    except CaptureError as e:
        torch.cuda.synchronize()
        return {"error": str(e).splitlines()[0]}
    row = time_steps(lambda: step(*inputs), steps, warmup)
    out = first_tensor(step(*inputs)).float()
    torch.cuda.synchronize()
    row = {**error(out, ref), **row, "causal_sdpa": step.causal_sdpa_installed}
    del step, out
    torch.cuda.empty_cache()
    return row


def served_calls(patches, model, inputs):
    """Per replaced function the model calls: its calls in one step, how many an op served, and by
    which exported file (_served.py); and the share served per type. The first of two steps checks
    the fresh replacements the measurement makes and is not counted."""
    rows, armed = {}, [False]
    # The hf-kernels build has its ops under a namespace of its own and no direct functions.
    ops = getattr(autokernel_ops, "ops", torch.ops.autokernel)
    direct = getattr(autokernel_ops, "DIRECT", None)
    if direct is None:
        from autokernel_ops import _load  # builds nothing: the extensions were built at import
        direct = _load.DIRECT

    def make(target, original):
        return make_replacement(target, original, ops, versions=autokernel_ops.VERSIONS, direct=direct,
                                shapes=autokernel_ops.SHAPES)
    with wrapping(patches, serving_wrapper(make, launches_of(ops), rows, armed)):
        run(model, inputs)
        armed[0] = True
        run(model, inputs)
    tags = file_tags(autokernel_ops.MANIFEST)
    calls = [r.row(tags) for r in rows.values() if r.calls or r.not_its_form]
    return {"calls": calls, "by_type": shares_by_type(calls)}


def liger_family(model):
    """The model's family as Liger-Kernel names its patches (config.model_type), or None."""
    return getattr(getattr(model, "config", None), "model_type", None)


def liger_row(module, dtype, ref, steps, warmup):
    """A fresh model patched by Liger-Kernel (liger_kernel.transformers.apply_liger_kernel_to_<family>,
    on the instance, its fused RMSNorm, RoPE and SwiGLU; no fused loss, so that the step still
    returns the logits), timed like the other rows, its output checked against fp32. Run last:
    Liger patches transformers' modules for good. A row with the reason where Liger is not
    installed or has no patch for the family."""
    try:
        import liger_kernel.transformers as liger
    except Exception as e:  # not installed, or it does not import here: the row says so
        return {"error": f"liger_kernel is not installed ({_short(e)}): pip install liger-kernel"}
    model, inputs = build(module, dtype)
    family = liger_family(model)
    apply = getattr(liger, f"apply_liger_kernel_to_{family}", None) if family else None
    if apply is None:
        del model, inputs
        return {"error": f"Liger-Kernel {getattr(liger, '__version__', '')} has no patch for the family {family!r}".replace("  ", " ")}
    import inspect
    wanted = {"rope": True, "rms_norm": True, "swiglu": True, "cross_entropy": False, "fused_linear_cross_entropy": False}
    params = inspect.signature(apply).parameters
    kwargs = {k: v for k, v in wanted.items() if k in params}
    try:
        apply(model=model, **kwargs)
        row = timed(model, inputs, ref, steps, warmup)
    except Exception as e:  # reported: a patch that does not run on this model
        torch.cuda.synchronize()
        return {"error": f"apply_liger_kernel_to_{family}: {_short(e)}"}
    row.update({"patch": f"apply_liger_kernel_to_{family}", "kwargs": kwargs})
    del model, inputs
    torch.cuda.empty_cache()
    return row


def _short(e):
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


@contextlib.contextmanager
def wrapping(patches, wrap):
    """Within the block, each patched attribute holds wrap(target, what is installed there, the
    original); after it, what was installed before, whatever the block did."""
    installed = [(t, getattr(t.owner, t.attr), original) for t, original in patches.applied]
    for t, current, original in installed:
        setattr(t.owner, t.attr, wrap(t, current, original))
    try:
        yield
    finally:
        for t, current, _ in installed:
            setattr(t.owner, t.attr, current)


def unpatched(patches):
    """Within a patched() block: the originals back in place for a while, the same replacements
    (already checked) after it."""
    return wrapping(patches, lambda target, current, original: original)


def timed_both(model, inputs, ref, patches, steps, warmup, rounds=3):
    """The rows of eager PyTorch and of eager with the ops, timed in alternating rounds (steps/rounds
    steps each, after warm-up in each): the machine's drift (its clocks, what else runs on its CPU)
    falls on both alike rather than on whichever went second."""
    times = {"eager": [], "autokernel": []}
    per_round = max(steps // rounds, 1)
    for _ in range(rounds):
        with unpatched(patches):
            times["eager"] += time_steps(lambda: model(*inputs), per_round, warmup)["times_ms"]
        times["autokernel"] += time_steps(lambda: model(*inputs), per_round, warmup)["times_ms"]
    with unpatched(patches):
        eager = {**error(run(model, inputs), ref), **summary(times["eager"])}
    return eager, {**error(run(model, inputs), ref), **summary(times["autokernel"])}


def capture_calls(patches, model, inputs):
    """Runs one eager step with a recorder in front of each installed replacement: for each one
    the model calls, the arguments of its first call. Returns [(target, replacement, args, kwargs)]."""
    seen = {}

    def recorder(target, replacement, original):
        def record(*args, **kwargs):
            seen.setdefault(target.name, (target, replacement, args, kwargs))
            return replacement(*args, **kwargs)
        return record
    with wrapping(patches, recorder):
        run(model, inputs)
    return list(seen.values())


def cpu_us_per_call(fn, args, kwargs, calls, batches=40):
    """The CPU time of one call of fn (µs): the best of `batches` batches of `calls` calls timed
    with perf_counter, the GPU synchronised between batches only. The calls only queue their
    kernels, and a batch is short enough not to fill the launch queue: the GPU's work is not in it
    (batches of 1, 10 and 50 calls measured the same on an H100, to within the machine's noise). The
    best of 40 batches, since a call of ten microseconds is easily held up by anything else the
    machine does."""
    best = float("inf")
    with torch.inference_mode():
        fn(*args, **kwargs)
        torch.cuda.synchronize()
        for _ in range(batches):
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args, **kwargs)
            best = min(best, (time.perf_counter() - start) / calls * 1e6)
            torch.cuda.synchronize()
    return best


def gpu_trace(work, repeats):
    """The "traceEvents" of a torch.profiler trace, GPU activity only, of `repeats` calls of work()
    (after one outside it), the GPU synchronised after each."""
    from torch.profiler import ProfilerActivity, profile
    with torch.inference_mode():
        work()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(repeats):
                work()
                torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)["traceEvents"]
    finally:
        os.remove(path)


def gpu_us_per_call(fn, args, kwargs, calls=20):
    """The GPU time of one call of fn (µs): the union of the kernels it launches, from a trace of
    `calls` calls, and the kernels by name."""
    busy = gpu_busy_per_step(gpu_trace(lambda: fn(*args, **kwargs), calls), calls, top=4)
    return busy["busy_us"], [k["name"][:90] for k in busy["kernels"]]


def in_model_cpu_us(patches, model, inputs, steps, originals=False):
    """{target name: {"us_per_call", "us_per_step", "calls_per_step"}}: perf_counter around every
    call of each installed replacement (of its original, with originals=True) during `steps` steps;
    us_per_call is the mean over the calls, us_per_step the time of its outermost calls in a step (a
    replaced function called inside another replaced one is in the outer one's time, not again in
    its own), what a step's CPU time would lose without it. A call in a model runs between the
    model's own code, with the caches that leaves, which a loop of the same call does not see; and
    where the CPU runs a step ahead of the GPU, a launch may wait for room in the launch queue, which
    this counts too (the GPU is synchronised after each step, so never more than a step's launches
    are queued)."""
    totals, depth = {}, [0]

    def timer(target, replacement, original):
        fn, acc = original if originals else replacement, totals.setdefault(target.name, [0.0, 0, 0.0])

        def timed_call(*args, **kwargs):
            depth[0] += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                depth[0] -= 1
                acc[0] += spent
                acc[1] += 1
                if depth[0] == 0:
                    acc[2] += spent
        return timed_call
    with wrapping(patches, timer), torch.inference_mode():
        for _ in range(steps):
            model(*inputs)
            torch.cuda.synchronize()
    return {name: {"us_per_call": total / count * 1e6, "us_per_step": outermost / steps * 1e6, "calls_per_step": count / steps}
            for name, (total, count, outermost) in totals.items() if count}


def first_op(patches, model, inputs, steps):
    """How far into a step the model first calls what the ops replace (ms, the median of `steps`
    steps, each after the GPU is drained): on the GPU's clock, an event recorded at that call against
    one at the step's start, and on the CPU's. Before that call the model runs its own Python (its
    masks, position tables, embedding) and issues little, so the GPU has almost nothing to do: that
    span is idle time no op can take away, and the rest of the step's idle time, at most idle_us
    less this span's, is the part the ops' side could still owe."""
    mark, gpu_ms, cpu_ms = {}, [], []

    def marker(target, replacement, original):
        def first(*args, **kwargs):
            if "event" not in mark:
                mark["cpu"] = time.perf_counter()
                mark["event"] = torch.cuda.Event(enable_timing=True)
                mark["event"].record()
            return replacement(*args, **kwargs)
        return first
    with wrapping(patches, marker), torch.inference_mode():
        model(*inputs)
        for _ in range(steps):
            torch.cuda.synchronize()
            mark.clear()
            start = torch.cuda.Event(enable_timing=True)
            began = time.perf_counter()
            start.record()
            model(*inputs)
            torch.cuda.synchronize()
            if "event" in mark:
                gpu_ms.append(start.elapsed_time(mark["event"]))
                cpu_ms.append((mark["cpu"] - began) * 1000)
    if not gpu_ms:
        return {}
    return {"first_op_ms": statistics.median(gpu_ms), "first_op_cpu_ms": statistics.median(cpu_ms)}


def op_cost(patches, model, inputs, calls, per_batch, steps=10):
    """For each replacement the model calls: the CPU time of one call in the model's steps and alone
    (on its first call's arguments, the best batch), the GPU time of the kernels it launches, its
    and the original's."""
    mine, theirs = in_model_cpu_us(patches, model, inputs, steps), in_model_cpu_us(patches, model, inputs, steps, True)
    rows = []
    none = {"us_per_call": 0.0, "us_per_step": 0.0, "calls_per_step": 0.0}
    for target, replacement, args, kwargs in calls:
        original = getattr(replacement, autokernel_ops.Patches.MARK)
        gpu_us, kernels = gpu_us_per_call(replacement, args, kwargs)
        original_gpu_us, original_kernels = gpu_us_per_call(original, args, kwargs)
        ours, theirs_ = mine.get(target.name, none), theirs.get(target.name, none)
        rows.append({"name": target.name, "type": target.type,
                     "us_per_call": ours["us_per_call"], "original_us_per_call": theirs_["us_per_call"],
                     "us_per_step": ours["us_per_step"], "original_us_per_step": theirs_["us_per_step"],
                     "calls_per_step": ours["calls_per_step"],
                     "alone_us_per_call": cpu_us_per_call(replacement, args, kwargs, per_batch),
                     "original_alone_us_per_call": cpu_us_per_call(original, args, kwargs, per_batch),
                     "gpu_us_per_call": gpu_us, "original_gpu_us_per_call": original_gpu_us,
                     "kernels": kernels, "original_kernels": original_kernels})
    return {"calls": rows, "max_us_per_call": max((r["alone_us_per_call"] for r in rows), default=0.0), "goal_us": 10.0}


def gpu_time(model, inputs, steps, step_ms):
    """Where a step's GPU time goes, from a trace of `steps` steps: the GPU's busy time per step,
    its idle time (step_ms, the step's median timed without a profiler, minus the busy time), the
    kernels that take the most (_timing.gpu_busy_per_step), the CPU time to issue a step (host_us)
    and what in a step waits for the GPU (syncs): why the GPU idles."""
    per_step = gpu_busy_per_step(gpu_trace(lambda: model(*inputs), steps), steps)
    if per_step["busy_us"] <= 0:
        return {"error": "the trace holds no kernel"}
    issue = host_ms(lambda: model(*inputs), max(steps, 10), 2)
    return {**per_step, "step_us": step_ms * 1000, "idle_us": max(step_ms * 1000 - per_step["busy_us"], 0.0),
            "steps": steps, "host_us": issue["median_ms"] * 1000, "syncs": host_syncs(lambda: model(*inputs))}


def compile_modes(model, inputs, ref, modes, steps, warmup):
    """torch.compile of the unpatched model in each mode: {mode: row}, and the fastest mode."""
    rows = {}
    for mode in modes:
        torch._dynamo.reset()
        rows[mode] = timed(torch.compile(model, mode=mode), inputs, ref, steps, warmup)
    torch._dynamo.reset()
    return rows, min(rows, key=lambda m: rows[m]["median_ms"])


def compile_decision(model, inputs, ref, mode, types, baseline, steps, warmup):
    """The per-op decision in `mode` (autokernel_ops.decide_for_compile), with each compiled step's
    output checked; returns (record, the compile + ops row)."""
    measured = {}

    def on_compiled(enabled, compiled, timing):
        measured[",".join(sorted(enabled))] = {**error(run(compiled, inputs), ref), **timing, "ops": sorted(enabled)}

    enabled, record = autokernel_ops.decide_for_compile(model, inputs, mode, types=types, steps=steps, warmup=warmup,
                                                        baseline_ms=baseline["median_ms"], on_compiled=on_compiled)
    record["measured"] = measured
    record["types"] = sorted(types)
    torch._dynamo.reset()
    if enabled:
        return record, {**measured[",".join(sorted(enabled))], "mode": mode}
    # No op helps: a compile of the patched model is the same program as compile alone.
    return record, {**baseline, "ops": [], "mode": mode, "same_as_compile": True}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--dtype", default="fp16", choices=sorted(_DTYPES))
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--compile", action="store_true",
                   help="also time torch.compile (each mode), and decide which ops run under it")
    p.add_argument("--compile-mode", choices=_MODES, help="time this mode only (default: all three)")
    p.add_argument("--no-max-autotune", action="store_true", help="leave out max-autotune-no-cudagraphs (slow to compile)")
    p.add_argument("--cuda-graphs", action="store_true", help="also time one step replayed as a CUDA graph, without and with the ops, "
                   "and as autokernel_ops.capture makes it")
    p.add_argument("--liger", action="store_true", help="also time Liger-Kernel's patch for the model's family (a row that says "
                   "why not where it is not installed)")
    p.add_argument("--cpu-calls", type=int, default=50, help="calls per timed batch of the CPU cost (default 50)")
    p.add_argument("--profile-steps", type=int, default=5, help="steps profiled for the GPU's busy and idle time (0: none)")
    a = p.parse_args()
    module = load_model_file(a.model)
    dtype = _DTYPES[a.dtype]
    report = {"model": a.model, "dtype": a.dtype, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "ops_loaded": autokernel_ops.LOADED, "ops_failed": autokernel_ops.FAILED}

    model32, inputs32 = build(module, torch.float32)
    ref = run(model32, inputs32)
    del model32, inputs32
    torch.cuda.empty_cache()

    model, inputs = build(module, dtype)
    with autokernel_ops.patched(also=(_MODULE,)) as patches:
        report["patched"] = patches.names
        run(model, inputs)  # the first eager call: class and helper replacements check themselves here
        report["eager"], report["autokernel"] = timed_both(model, inputs, ref, patches, a.steps, a.warmup)
        calls = capture_calls(patches, model, inputs)
        report["served"] = served_calls(patches, model, inputs)
        report["cpu_cost"] = op_cost(patches, model, inputs, calls, a.cpu_calls)
        if a.profile_steps > 0:
            with unpatched(patches):
                idle = {"eager": gpu_time(model, inputs, a.profile_steps, report["eager"]["median_ms"])}
                idle["eager"].update(first_op(patches, model, inputs, 10))
            idle["autokernel"] = gpu_time(model, inputs, a.profile_steps, report["autokernel"]["median_ms"])
            idle["autokernel"].update(first_op(patches, model, inputs, 10))
            if "idle_us" in idle["eager"] and "idle_us" in idle["autokernel"]:
                idle["added_us"] = idle["autokernel"]["idle_us"] - idle["eager"]["idle_us"]
            report["gpu_idle"] = idle
        if a.cuda_graphs:
            with unpatched(patches):
                report["graph"] = graph_row(model, inputs, ref, a.steps, a.warmup)
            report["autokernel_graph"] = graph_row(model, inputs, ref, a.steps, a.warmup)
            with unpatched(patches):
                report["capture"] = captured_row(model, inputs, ref, a.steps, a.warmup)
            report["autokernel_capture"] = captured_row(model, inputs, ref, a.steps, a.warmup)
    # torch.compile last: its compile workers and autotuning leave nothing running beside the eager
    # steps above, which the CPU time of a call (and so the step) is sensitive to.
    if a.compile:
        modes = [a.compile_mode] if a.compile_mode else [m for m in _MODES
                                                         if not (a.no_max_autotune and m.startswith("max-autotune"))]
        report["compile_modes"], best = compile_modes(model, inputs, ref, modes, a.steps, a.warmup)
        report["compile"] = {**report["compile_modes"][best], "mode": best}
        with autokernel_ops.patched(also=(_MODULE,)):
            run(model, inputs)  # the replacements are new: they check themselves again
            types = sorted({target.type for target, _, _, _ in calls})  # only what the model calls
            report["compile_decision"], report["autokernel_compile"] = compile_decision(
                model, inputs, ref, report["compile"]["mode"], types, report["compile"], a.steps, a.warmup)
    if a.liger:  # last: Liger's patch changes transformers' modules for good
        del model, inputs
        torch.cuda.empty_cache()
        report["liger"] = liger_row(module, dtype, ref, a.steps, a.warmup)
    with open(a.json, "w") as f:
        json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
