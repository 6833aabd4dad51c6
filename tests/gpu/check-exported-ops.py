"""Checks an exported package on the GPU: each op against PyTorch on the shapes of the harness's
five stages (every dtype, normal and adversarial values, bitwise repeatability), inside
torch.compile, and its time at the shape the run measured beside the harness's time for the file it was exported from.

    PYTHONPATH=PKG python3 tests/gpu/check-exported-ops.py --autokernel BIN --json OUT.json

Time of an op, three ways, each the median of --repetitions calls:
  kernel        the CUPTI duration of its kernel (torch.profiler), L2 flushed before each call: the
                harness's own measure, compared with the harness's median
  flushed       CUDA events around one call after a 256 MiB write that flushes L2: the op's dispatch,
                its launch and its kernel, compared with the harness's CUDA-event median
  back_to_back  CUDA events around --repetitions calls in a row, divided: throughput, L2 warm
The harness's time comes from `autokernel bench FILE --shape S --json` in the same process tree.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F

import autokernel_ops

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def parse_shape(text):
    return [int(x) for x in text.split("x")]


def inputs(type_, shape, dtype, recipe, gen):
    """The op's arguments for a spec shape, with data drawn by `recipe` (normal, one_huge, constant, mixed)."""
    def data(*size):
        x = torch.randn(*size, device="cuda", generator=gen)
        if recipe == "one_huge":
            x[..., 0] = 1000.0
        elif recipe == "constant":
            x = torch.full(size, 3.0, device="cuda")
        elif recipe == "mixed":
            x = torch.randint(1, 1001, size, device="cuda", generator=gen).float()
            x[..., 1::2] *= -1
        return x.to(dtype)

    def uniform(lo, hi, *size):
        return (lo + (hi - lo) * torch.rand(*size, device="cuda", generator=gen)).to(dtype)

    if type_ == "rotary_embedding" and len(shape) == 4:  # a file of contract version 1: q alone
        b, h, s, d = shape
        return (data(b, h, s, d), uniform(0.5, 1.5, s, d // 2), uniform(-0.5, 0.5, s, d // 2))  # the harness's fills
    if type_ == "rotary_embedding":  # version 2: q and k in the shape's layout (kernels_cuda/rotary_embedding/rotary_layouts.hpp)
        b, hq, hk, s, d, layout = shape
        if layout == 0:
            q, k, tables = data(b, hq, s, d), data(b, hk, s, d), 1
        elif layout == 1:  # a projection's output, viewed per head and transposed, as transformers has it
            q, k, tables = data(b, s, hq, d).transpose(1, 2), data(b, s, hk, d).transpose(1, 2), b
        else:  # slices of one fused qkv row
            qkv = data(b, s, (hq + 2 * hk) * d)
            q = qkv[..., : hq * d].view(b, s, hq, d).transpose(1, 2)
            k = qkv[..., hq * d: (hq + hk) * d].view(b, s, hk, d).transpose(1, 2)
            tables = b
        return (q, k, uniform(0.5, 1.5, tables, s, d), uniform(-0.5, 0.5, tables, s, d))
    if type_ == "swiglu" and len(shape) == 3:  # version 2: [rows, cols, ld], rows of gate and up ld apart
        rows, cols, ld = shape
        g, u = data(rows, ld), torch.randn(rows, ld, device="cuda", generator=gen).to(dtype)
        if ld >= 2 * cols:  # the halves of one fused projection, as chunk(2, dim=-1) gives them
            g[:, cols:2 * cols] = u[:, :cols]
            return (g[:, :cols], g[:, cols:2 * cols])
        return (g[:, :cols], u[:, :cols])
    if type_ == "swiglu":  # the recipe's values in the gate, where silu's exp overflows; up plain
        return (data(*shape), torch.randn(*shape, device="cuda", generator=gen).to(dtype))
    rows, cols = shape
    if type_ == "rmsnorm":
        return (data(rows, cols), uniform(0.5, 1.5, cols), 1e-6)
    if type_ == "layernorm":
        return (data(rows, cols), uniform(0.5, 1.5, cols), uniform(-0.5, 0.5, cols), 1e-5)
    if type_ == "cross_entropy":
        return (data(rows, cols), torch.randint(0, cols, (rows,), device="cuda", generator=gen))
    return (data(rows, cols),)


def reference(type_, args):
    """PyTorch's op computed in fp64, like the harness's CPU reference, on the op's own inputs."""
    if type_ == "rmsnorm":
        x, w, eps = args
        return F.rms_norm(x.double(), (x.shape[-1],), w.double(), eps)
    if type_ == "layernorm":
        x, w, b, eps = args
        return F.layer_norm(x.double(), (x.shape[-1],), w.double(), b.double(), eps)
    if type_ == "softmax":
        return torch.softmax(args[0].double(), -1)
    if type_ == "reduce":
        return args[0].double().sum(-1)
    if type_ == "swiglu":
        return F.silu(args[0].double()) * args[1].double()
    if type_ == "cross_entropy":
        loss = F.cross_entropy(args[0].double(), args[1], reduction="none")
        return (loss, loss.mean())
    if len(args) == 4:  # version 2: transformers' apply_rotary_pos_emb on q and k
        q, k, cos, sin = (a.double() for a in args)
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        return (q * c + rotate_half(q) * s, k * c + rotate_half(k) * s)
    q, cos, sin = args
    c, s = torch.cat((cos, cos), -1).double(), torch.cat((sin, sin), -1).double()
    return q.double() * c + rotate_half(q.double()) * s


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


def matches(got, want, tol, scale=None):
    """got against the fp64 result, |got - want| <= tol * (1 + scale), scale being |want| or, where
    the result is a difference of larger terms (rotary), the sum of their magnitudes: fp32 rounds
    the terms, not the difference. tol is the harness's, and at least one unit in the last place of
    the dtype: two correct kernels may round a result to neighbouring values."""
    if isinstance(want, tuple):
        scales = scale if isinstance(scale, tuple) else (None,) * len(want)
        return all(matches(g, w, tol, s) for g, w, s in zip(got, want, scales))
    tol = max(tol, {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}.get(got.dtype, 0.0))
    scale = want.abs() if scale is None else scale
    return bool(((got.double() - want).abs() <= tol * (1 + scale)).all())


def term_scale(type_, args):
    """The magnitude of the terms a rotary result is the difference of; None for the other types."""
    if type_ != "rotary_embedding":
        return None
    if len(args) == 4:
        q, k, cos, sin = (a.double() for a in args)
        c, s = cos.unsqueeze(1).abs(), sin.unsqueeze(1).abs()
        return ((q * c).abs() + (rotate_half(q) * s).abs(), (k * c).abs() + (rotate_half(k) * s).abs())
    q, cos, sin = (a.double() for a in args)
    return (q * torch.cat((cos, cos), -1)).abs() + (rotate_half(q) * torch.cat((sin, sin), -1)).abs()


def check_stages(op, type_, validated):
    """Every stage shape in every dtype on normal values; adversarial values on the stability shape;
    two runs bitwise equal on the determinism shape."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    failures, cases = [], 0
    shapes = validated["stage_shapes"]
    for dname, tol in sorted(validated["tolerance"].items()):
        dtype = DTYPES[dname]
        for text in shapes:
            shape = parse_shape(text)
            recipes = ["normal"] + (["one_huge", "constant", "mixed"] if text == validated["stability_shape"] else [])
            for recipe in recipes:
                if recipe == "mixed" and dtype == torch.float16 and type_ in ("reduce", "cross_entropy"):
                    continue  # sums of 1000s overflow fp16 in the reference's own output
                args = inputs(type_, shape, dtype, recipe, gen)
                got = op(*args)
                cases += 1
                if not matches(got, reference(type_, args), tol, term_scale(type_, args)):
                    failures.append(f"{dname} {text} {recipe}")
                if type_ == "rotary_embedding" and len(args) == 4 and not pytorch_strides(got, args):
                    failures.append(f"{dname} {text} strides {[g.stride() for g in got]}")
                # The registered op is what torch.compile's graphs call: its results may not alias.
                if type_ == "rotary_embedding" and len(args) == 4 \
                        and got[0].untyped_storage().data_ptr() == got[1].untyped_storage().data_ptr():
                    failures.append(f"{dname} {text} q's and k's results share a storage")
        args = inputs(type_, parse_shape(validated["determinism_shape"]), dtype, "normal", gen)
        a, b = op(*args), op(*args)
        same = all(torch.equal(x, y) for x, y in zip(a, b)) if isinstance(a, tuple) else torch.equal(a, b)
        cases += 1
        if not same:
            failures.append(f"{dname} determinism")
    return cases, failures


def pytorch_strides(got, args):
    """Whether the op's results have the strides transformers' own rotary code gives its results."""
    q, k, cos, sin = args
    want = [(x * cos.unsqueeze(1) + rotate_half(x) * sin.unsqueeze(1)).stride() for x in (q, k)]
    return [g.stride() for g in got] == want


def fallback_cases(type_, args):
    """Calls outside the kernel's contract, each with PyTorch's own answer: the op must give it."""
    def strided(x):  # the same values, not contiguous
        return x.t().contiguous().t() if x.dim() == 2 else x.transpose(1, 2).contiguous().transpose(1, 2)
    x = args[0]
    cases = {"x not contiguous": (strided(x),) + tuple(args[1:])}
    if type_ == "rmsnorm":
        cases["weight of another dtype"] = (x, args[1].float(), args[2])
    if type_ == "layernorm":
        cases["weight and bias of another dtype"] = (x, args[1].float(), args[2].float(), args[3])
    if type_ == "swiglu":
        up = args[1]
        cases["up not contiguous"] = (x, strided(up))
        cases["up of another dtype"] = (x, up.float())
        cases["up broadcast over the rows"] = (x, up[0])
        cases["gate with no dimensions"] = (x[0, 0], up[0, 0])
        cases["up's rows another stride apart than gate's"] = (x, torch.cat((up, up), -1)[:, : up.shape[-1]])
        # The same values one element into a wider buffer: rows cols + 1 apart, gate 2 bytes past alignment.
        cases["gate and up not 16-byte aligned"] = (torch.cat((x[:, :1], x), -1)[:, 1:], torch.cat((up[:, :1], up), -1)[:, 1:])
    if type_ == "cross_entropy":
        target = args[1].clone()
        target[::7] = -100  # ignore_index: the kernel's own rule in contract version 2, PyTorch's in version 1
        cases["targets with ignore_index -100"] = (x, target)
    if type_ == "rotary_embedding" and len(args) == 4:
        q, k, cos, sin = args
        cases = {"cos of another dtype": (q, k, cos.float(), sin.float()),
                 "head_dim strided": (torch.cat((q, q), -1)[..., ::2], k, cos, sin),
                 "k of another dtype": (q, k.float(), cos, sin)}
    elif type_ == "rotary_embedding":
        cases["cos of another dtype"] = (x, args[1].float(), args[2].float())
    return cases


def pytorch_op(type_, args):
    if type_ == "rmsnorm":
        return F.rms_norm(args[0], (args[0].shape[-1],), args[1], args[2])
    if type_ == "layernorm":
        return F.layer_norm(args[0], (args[0].shape[-1],), args[1], args[2], args[3])
    if type_ == "softmax":
        return torch.softmax(args[0], -1)
    if type_ == "reduce":
        return args[0].sum(-1)
    if type_ == "swiglu":
        return F.silu(args[0]) * args[1]
    if type_ == "cross_entropy":
        return (F.cross_entropy(args[0], args[1], reduction="none"), F.cross_entropy(args[0], args[1]))
    return None  # rotary: compared with the fp64 reference instead


def check_fallbacks(op, type_, dtype, version):
    """Each call outside the contract gives PyTorch's result (or the reference's, for rotary)."""
    gen = torch.Generator(device="cuda").manual_seed(2)
    shape = {1: [4, 8, 64, 128], 2: [2, 8, 2, 64, 128, 1]}[version] if type_ == "rotary_embedding" else [64, 1000]
    if type_ == "swiglu" and version >= 2:
        shape = [64, 1000, 1000]  # dense operands, which the cases then make otherwise
    failures = []
    for why, args in fallback_cases(type_, inputs(type_, shape, dtype, "normal", gen)).items():
        try:
            want = pytorch_op(type_, args)
        except RuntimeError:  # PyTorch refuses the call: the op must refuse it too
            want = "refused"
        try:
            got = op(*args)
        except RuntimeError:
            got = "refused"
        if isinstance(got, str) or isinstance(want, str):
            ok = isinstance(got, str) and isinstance(want, str)
        elif want is None:
            ok = matches(got, reference(type_, args), 1e-2, term_scale(type_, args))
        elif isinstance(want, tuple):
            ok = all(torch.allclose(g.float(), w.float(), rtol=1e-2, atol=1e-2, equal_nan=True) for g, w in zip(got, want))
        else:
            ok = torch.allclose(got.float(), want.float(), rtol=1e-2, atol=1e-2)
        if not ok:
            failures.append(why)
    return failures


def check_withdrawn_patch():
    """A norm class the package has not seen, computing something else (Gemma's 1 + weight): the
    patch must check it on its first call, find it differs, and leave it alone."""
    class OffsetRMSNorm(torch.nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight, self.variance_epsilon = torch.nn.Parameter(torch.randn(d, device="cuda") * 0.1), 1e-6

        def forward(self, x):
            return F.rms_norm(x, (x.shape[-1],), None, self.variance_epsilon) * (1 + self.weight)

    globals()["OffsetRMSNorm"] = OffsetRMSNorm
    OffsetRMSNorm.__module__ = "__main__"
    norm = OffsetRMSNorm(1024).half()
    x = torch.randn(64, 1024, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        want = norm(x)
        with autokernel_ops.patched() as p:
            patched = any("OffsetRMSNorm" in n for n in p.names)
            first, second = norm(x), norm(x)
    return {"patched": patched, "first_call_right": bool(torch.equal(first, want)),
            "later_calls_right": bool(torch.equal(second, want))}


# Beyond the stage shapes: a LLaMA's MLP activations (batch 2, 2048 tokens, 5632 features) as the
# model hands them over, with their leading dimensions; a column count no vector width divides; one
# column; one element.
SWIGLU_SHAPES = ([2, 2048, 5632], [3, 5, 1001], [4097, 1], [1, 1])


# Phi-3's MLP as its forward hands the op its halves: gate_up_proj's output [batch, tokens, 2 I]
# chunked in two, each a view with rows 2 I apart, up I elements after gate (Phi-3 mini's I 8192,
# an odd I, and one row).
SWIGLU_CHUNKED = ([2, 2048, 8192], [3, 5, 1001], [1, 8])


def check_swiglu_shapes(op, tolerance, version):
    """The op on gates of more than two dimensions and odd widths, and (version 2) on the halves of
    one fused projection, every dtype, against the fp64 result, with gate's shape; on the halves,
    the kernel itself must have run where the contract covers them (16-byte aligned: I a multiple of 8)."""
    gen = torch.Generator(device="cuda").manual_seed(3)
    failures = []
    for dname, tol in sorted(tolerance.items()):
        dtype = DTYPES[dname]
        for shape in SWIGLU_SHAPES:
            args = (torch.randn(*shape, device="cuda", generator=gen).to(dtype),
                    torch.randn(*shape, device="cuda", generator=gen).to(dtype))
            got = op(*args)
            if list(got.shape) != shape or not matches(got, reference("swiglu", args), tol):
                failures.append(f"{dname} {'x'.join(map(str, shape))}")
        for shape in SWIGLU_CHUNKED:
            h = torch.randn(*shape[:-1], 2 * shape[-1], device="cuda", generator=gen).to(dtype)
            gate, up = h.chunk(2, dim=-1)
            got = op(gate, up)
            name = f"{dname} halves of {'x'.join(map(str, h.shape))}"
            if list(got.shape) != shape or not got.is_contiguous() or not matches(got, reference("swiglu", (gate, up)), tol):
                failures.append(name)
            covered = version >= 2 and shape[-1] * h.element_size() % 16 == 0
            if covered and not any("swiglu_kernel" in k for k in kernel_names(lambda: op(gate, up))):
                failures.append(f"{name}: PyTorch's op ran, not the kernel")
    return failures


def kernel_names(work):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        work()
        torch.cuda.synchronize()
    return {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}


def check_swiglu_patch():
    """A gated MLP of the program's own (LlamaMLP's forward, nn.SiLU), one of Phi3MLP's form (a fused
    gate_up_proj, its halves to the op), transformers' LlamaMLP and Phi3MLP where it is installed
    (its own SiLU module), and two MLPs the op does not serve (GELU-gated; GPT-2's c_fc and c_proj): patched,
    the gated ones give their own output within the dtype's tolerance, eagerly and compiled with
    swiglu decided; the others give theirs bit for bit."""
    class TinyLlamaMLP(torch.nn.Module):
        def __init__(self, d, i, act):
            super().__init__()
            self.gate_proj, self.up_proj = torch.nn.Linear(d, i, bias=False), torch.nn.Linear(d, i, bias=False)
            self.down_proj, self.act_fn = torch.nn.Linear(i, d, bias=False), act

        def forward(self, x):
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

    class GeluGatedMLP(TinyLlamaMLP):
        def forward(self, x):  # its own: a class is patched where its forward is defined
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

    class GPT2LikeMLP(torch.nn.Module):
        def __init__(self, d, i):
            super().__init__()
            self.c_fc, self.c_proj, self.act = torch.nn.Linear(d, i), torch.nn.Linear(i, d), torch.nn.GELU()

        def forward(self, x):
            return self.c_proj(self.act(self.c_fc(x)))

    class Phi3LikeMLP(torch.nn.Module):  # Phi3MLP's forward: one gate_up_proj, its halves gate and up
        def __init__(self, d, i):
            super().__init__()
            self.gate_up_proj, self.down_proj = torch.nn.Linear(d, 2 * i, bias=False), torch.nn.Linear(i, d, bias=False)
            self.activation_fn = torch.nn.SiLU()

        def forward(self, x):
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
            return self.down_proj(up * self.activation_fn(gate))

    for cls in (TinyLlamaMLP, GeluGatedMLP, GPT2LikeMLP, Phi3LikeMLP):
        cls.__module__ = "__main__"
        globals()[cls.__name__] = cls
    models = {"TinyLlamaMLP": TinyLlamaMLP(1024, 2816, torch.nn.SiLU()), "GeluGatedMLP": GeluGatedMLP(1024, 2816, torch.nn.GELU()),
              "GPT2LikeMLP": GPT2LikeMLP(1024, 4096), "Phi3LikeMLP": Phi3LikeMLP(1024, 2816)}
    try:
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import LlamaMLP
        models["LlamaMLP"] = LlamaMLP(LlamaConfig(hidden_size=1024, intermediate_size=2816, hidden_act="silu"))
    except ImportError:
        pass
    try:
        from transformers import Phi3Config
        from transformers.models.phi3.modeling_phi3 import Phi3MLP
        models["Phi3MLP"] = Phi3MLP(Phi3Config(hidden_size=1024, intermediate_size=2816, hidden_act="silu"))
    except ImportError:
        pass
    # A file of swiglu's version 1 reads dense operands only: Phi-3's halves are then not the op's form.
    strided = autokernel_ops.VERSIONS.get("swiglu", 2) >= 2
    x = torch.randn(2, 64, 1024, device="cuda", dtype=torch.float16)
    result = {}
    with torch.no_grad():
        for name, m in models.items():
            m.half().cuda()
            want = m(x)
            torch._dynamo.reset()
            want_compiled = torch.compile(m, fullgraph=True)(x)  # Inductor rounds otherwise than eager
            with autokernel_ops.patched() as p:
                first, second = m(x), m(x)
                ran = any("swiglu_kernel" in k for k in kernel_names(lambda: m(x)))
                patched = any(f".{type(m).__name__}.forward" in n for n in p.names)
                autokernel_ops.set_compile_ops(["swiglu"])
                torch._dynamo.reset()
                compiled = torch.compile(m, fullgraph=True)(x)
                autokernel_ops.set_compile_ops([])
                torch._dynamo.reset()
            gated = name in ("TinyLlamaMLP", "LlamaMLP") or (strided and name in ("Phi3LikeMLP", "Phi3MLP"))
            if gated:
                same = lambda a, b: torch.allclose(a.float(), b.float(), rtol=1e-2, atol=1e-2)  # noqa: E731
            else:
                same = torch.equal
            result[name] = {"patched": patched,
                            "op_ran": ran, "op_expected": gated, "first_call_right": same(first, want),
                            "later_calls_right": same(second, want), "compiled_right": same(compiled, want_compiled)}
    return result


def time_op(op, args, repetitions):
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    for _ in range(10):
        op(*args)
    flushed = []
    for _ in range(repetitions):
        flush.fill_(1)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        op(*args)
        e1.record()
        e1.synchronize()
        flushed.append(e0.elapsed_time(e1) * 1000)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    e0.record()
    for _ in range(repetitions):
        op(*args)
    e1.record()
    e1.synchronize()
    return {"flushed_median_us": statistics.median(flushed), "flushed_min_us": min(flushed),
            "flushed_max_us": max(flushed), "back_to_back_us": e0.elapsed_time(e1) * 1000 / repetitions}


def kernel_time(op, args, type_, repetitions):
    """The median CUPTI duration of the op's kernel (torch.profiler), one L2 flush before each call:
    the harness's own measure."""
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(repetitions):
            flush.fill_(1)
            op(*args)
        torch.cuda.synchronize()
    times = sorted(e.time_range.elapsed_us() for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA and f"{type_}_kernel" in e.name)
    return times[len(times) // 2] if times else float("nan")


def harness_time(autokernel, file, type_, shape, dtype):
    """The harness's time for the file the op was exported from (manifest "origin": the package holds
    only the compiled module): a path from where the export ran, or 'starter' or a variant's name."""
    if "/" in file and not os.path.exists(file):
        return {"error": f"{file}, the file the op was exported from, is not at hand here"}
    out = subprocess.run([autokernel, "bench", file, "--kernel", type_, "--shape", shape, "--dtype", dtype, "--json"],
                         capture_output=True, text=True)
    verdicts = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if not verdicts or "timing" not in verdicts[-1]:
        return {"error": out.stderr[-500:]}
    t = verdicts[-1]["timing"]
    return {"median_us": t["median_us"], "p10_us": t["p10_us"], "p90_us": t["p90_us"], "event_median_us": t["event_median_us"]}


def compiles(op, args):
    compiled = torch.compile(lambda *a: op(*a), fullgraph=True)
    got, want = compiled(*args), op(*args)
    return all(torch.equal(x, y) for x, y in zip(got, want)) if isinstance(got, tuple) else bool(torch.equal(got, want))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--autokernel", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--repetitions", type=int, default=200)
    a = p.parse_args()
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "loaded": autokernel_ops.LOADED,
              "failed": autokernel_ops.FAILED, "ops": {}}
    ok = not autokernel_ops.FAILED
    for entry in autokernel_ops.MANIFEST["ops"]:
        t = entry["type"]
        op = getattr(torch.ops.autokernel, t)
        cases, failures = check_stages(op, t, entry["validated"])
        r = {"cases": cases, "failures": failures}
        shape, dtype = entry.get("shape") or entry["validated"]["determinism_shape"], entry.get("dtype") or "fp16"
        args = inputs(t, parse_shape(shape), DTYPES[dtype], "normal", torch.Generator(device="cuda").manual_seed(1))
        r["compile_matches"] = compiles(op, args)
        r["fallback_failures"] = check_fallbacks(op, t, torch.float16, entry.get("contract_version", 1))
        r["shape"], r["dtype"] = shape, dtype
        r["op"] = time_op(op, args, a.repetitions)
        r["op"]["kernel_median_us"] = kernel_time(op, args, t, a.repetitions)
        r["harness"] = harness_time(a.autokernel, entry["origin"], t, shape, dtype)
        if "median_us" in r["harness"]:
            # Kernel against kernel (CUPTI both), and call against launch (CUDA events both).
            r["kernel_over_harness"] = r["op"]["kernel_median_us"] / r["harness"]["median_us"]
            r["events_over_harness_events"] = r["op"]["flushed_median_us"] / r["harness"]["event_median_us"]
        if t == "swiglu":
            r["shape_failures"] = check_swiglu_shapes(op, entry["validated"]["tolerance"], entry.get("contract_version", 1))
        ok = ok and not failures and r["compile_matches"] and not r["fallback_failures"] and not r.get("shape_failures")
        report["ops"][t] = r
        print(f"{t}: {cases} cases, {len(failures)} failures {failures[:5]}; outside the contract: "
              f"{len(fallback_cases(t, args))} calls, wrong: {r['fallback_failures']}; torch.compile "
              f"{'matches' if r['compile_matches'] else 'DIFFERS'}; at {shape} {dtype}: op kernel {r['op']['kernel_median_us']:.2f} us, "
              f"call {r['op']['flushed_median_us']:.2f} us (events, flushed), {r['op']['back_to_back_us']:.2f} us (back to back); "
              f"harness {r['harness']}")
    if "rmsnorm" in autokernel_ops.LOADED:
        report["withdrawn_patch"] = check_withdrawn_patch()
        print(f"a norm class computing something else: {report['withdrawn_patch']}")
        ok = ok and report["withdrawn_patch"]["first_call_right"] and report["withdrawn_patch"]["later_calls_right"]
    if "swiglu" in autokernel_ops.LOADED:
        report["swiglu_patch"] = check_swiglu_patch()
        print(f"gated and other MLP classes, patched: {report['swiglu_patch']}")
        ok = ok and all(v["first_call_right"] and v["later_calls_right"] and v["compiled_right"]
                        and v["op_ran"] == v["op_expected"] for v in report["swiglu_patch"].values())
    with open(a.json, "w") as f:
        json.dump(report, f, indent=2)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
