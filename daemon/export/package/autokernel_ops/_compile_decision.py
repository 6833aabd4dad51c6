"""Which op types stand in for Inductor's code when a patched model is compiled. Inductor fuses a
norm or a softmax into its neighbours; an op it cannot see into ends that fusion, so a kernel
faster alone can make the compiled step slower. So the choice is made on the whole compiled step:
compile alone, then each op type alone enabled, then the types that each helped, together; the
fastest of those sets is kept when its step is faster than compile alone (by min_gain), else none.

    enabled, record = autokernel_ops.decide_for_compile(model, inputs, mode="default")
    autokernel_ops.set_compile_ops(saved)          # a decision made earlier

choose() is the decision over measured times, pure (tested with scripted timings:
tests/daemon/export/replacements_test.py); decide_for_compile() measures them."""
from ._replacements import set_compile_ops

MIN_GAIN = 0.01  # a step must be 1% faster: less is within the noise of a median over 20 steps


def choose(types, measure, baseline_ms=None, min_gain=MIN_GAIN):
    """measure(frozenset of types) -> the median ms of the compiled step with those types enabled.
    baseline_ms, when given, is the step compiled with none (measured already: not compiled again).
    Returns (the enabled frozenset, a record of every time and the outcome)."""
    base = measure(frozenset()) if baseline_ms is None else baseline_ms
    bar = base * (1 - min_gain)
    single = {t: measure(frozenset([t])) for t in sorted(types)}
    helped = sorted(t for t, ms in single.items() if ms < bar)
    # The sets to choose from: each type that helped alone (each beat the bar), and those together
    # (one op can undo another's fusion, so together may lose to one of them alone). The fastest
    # wins; it beats the bar, since every type in `helped` did alone.
    candidates = {(t,): single[t] for t in helped}
    together = None
    if len(helped) == 1:
        together = single[helped[0]]  # the same compiled step: not measured twice
    elif helped:
        together = candidates[tuple(helped)] = measure(frozenset(helped))
    enabled = list(min(candidates, key=candidates.get)) if candidates else []
    return frozenset(enabled), {"baseline_ms": base, "single_ms": single, "helped": helped,
                                "together_ms": together, "enabled": enabled, "min_gain": min_gain}


def decide_for_compile(model, inputs, mode="default", types=(), steps=20, warmup=5, baseline_ms=None,
                       min_gain=MIN_GAIN, on_compiled=None):
    """Measures and records (set_compile_ops) the op types to enable under torch.compile for
    `model(*inputs)` compiled in `mode`. Call it with the model patched (autokernel_ops.patched())
    and after one eager call, so that class and helper replacements have checked themselves.
    on_compiled(enabled, compiled_model, timing), when given, sees each compiled model while it is
    current (verify.py takes its output there). Returns (enabled frozenset, record)."""
    import torch

    from ._timing import time_steps

    def measure(enabled):
        torch._dynamo.reset()
        set_compile_ops(enabled)
        compiled = torch.compile(model, mode=mode)
        timing = time_steps(lambda: compiled(*inputs), steps, warmup)
        if on_compiled is not None:
            on_compiled(enabled, compiled, timing)
        return timing["median_ms"]

    enabled, record = choose(types, measure, baseline_ms, min_gain)
    torch._dynamo.reset()
    set_compile_ops(enabled)
    record["mode"] = mode
    return enabled, record
