"""An hf-kernels export as a user of the Hugging Face `kernels` library takes it, beside the torch
layout of the same run, in one process (tests/gpu/gpu-models.sh hf-kernels runs it on the GPU machine):

    python3 tests/gpu/hf-kernels-check.py --hf DIR --torch-pkg DIR --model examples/models/hf_qwen3.py --json OUT

1. get_local_kernel(DIR): the variant the library picks, the package's op namespace, the ops loaded.
2. torch.library.opcheck on every compute op of the build (schema, fake tensor, autograd
   registration, AOT dispatch), on inputs of the shapes the model runs.
3. kernel-abi-check (PyPI `kernel-abi-check`, where installed) on the variant's shared library.
4. The model (its build(dtype), seeded alike every time) unpatched, with our patch
   (autokernel_ops.patched() of the torch layout), and kernelized with the export's layers (eager
   and torch.compile(fullgraph=True)); each output against fp32, agreeing when its error is at most
   twice the unpatched model's own in that dtype (autokernel verify's rule); the step times
   interleaved round by round, and a table.

Every check runs whatever failed before it; each failure is a line starting "FAIL" and the exit
status is 1 if there is any."""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
import traceback
from pathlib import Path

import torch

FAILURES = []
REPORT = {}


def fail(what, why):
    FAILURES.append(f"{what}: {why}")
    print(f"FAIL {what}: {why}", flush=True)


def guarded(what):
    """Runs the decorated check now; an exception is a FAIL line, and the script goes on."""
    def run(fn):
        try:
            return fn()
        except Exception as e:  # reported, not raised: one run says everything that failed
            fail(what, f"{type(e).__name__}: {e}")
            traceback.print_exc()
            return None
    return run


def max_err(out, ref):
    return float((out - ref).abs().max()) if bool(torch.isfinite(out).all()) else float("inf")


# Sample arguments of each compute op at shapes the decoder runs (Qwen3 of examples/models/: rows
# of 2048 and 128, MLP to 6144, 16 query and 4 key/value heads of 128).
def sample_args(type_, dtype, version):
    d = dict(device="cuda", dtype=dtype)
    r = lambda *s: torch.randn(*s, **d)  # noqa: E731
    if type_ == "rmsnorm":
        return [(r(512, 2048), r(2048), 1e-6), (r(4096, 128), r(128), 1e-6)]
    if type_ == "layernorm":
        return [(r(512, 2048), r(2048), r(2048), 1e-5)]
    if type_ in ("softmax", "reduce"):
        return [(r(512, 1024),)]
    if type_ == "swiglu":
        return [(r(512, 6144), r(512, 6144))]
    if type_ == "rotary_embedding":
        if version == 1:
            return [(r(2, 16, 256, 128), r(256, 64), r(256, 64))]
        q = r(2, 256, 16, 128).transpose(1, 2)  # transformers' q: a transposed view
        return [(q, r(2, 4, 256, 128), r(2, 256, 128), r(2, 256, 128))]
    if type_ == "cross_entropy":
        return [(r(64, 32000), torch.randint(0, 32000, (64,), device="cuda"))]
    if type_ == "matmul":
        return [(r(512, 2048), r(6144, 2048), None)]
    if type_ == "fused_mlp":
        return [(r(512, 2048), r(2048, 6144), r(2048, 6144), r(6144, 2048))]
    if type_ == "flash_attention":
        if version == 1:
            return [(r(2, 16, 256, 128), r(2, 16, 256, 128), r(2, 16, 256, 128))]
        # transformers' q, k and v: the projections' transposed views, 4 kv heads for 16 query heads.
        q, k, v = r(2, 256, 16, 128).transpose(1, 2), r(2, 256, 4, 128).transpose(1, 2), r(2, 256, 4, 128).transpose(1, 2)
        return [(q, k, v, True), (r(2, 16, 256, 128), r(2, 16, 256, 128), r(2, 16, 256, 128), False)]
    return []


def opcheck_all(ak, dtype):
    rows = {}
    for t in ak.LOADED:
        op = getattr(ak.ops, t)
        for i, args in enumerate(sample_args(t, dtype, ak.VERSIONS.get(t, 2))):
            name = f"{t}[{i}]"
            try:
                result = torch.library.opcheck(op.default, args)
                # The autograd registration is checked only on inputs that require gradients: the
                # op, forward only, must then give outputs that do not (no kernel at an autograd
                # key pretending otherwise).
                grad_args = tuple(x.detach().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point()
                                  else x for x in args)
                result.update(torch.library.opcheck(op.default, grad_args, test_utils=("test_autograd_registration",)))
                rows[name] = {k: str(v) for k, v in result.items()}
                print(f"opcheck {name}: {result}", flush=True)
            except Exception as e:
                rows[name] = {"error": f"{type(e).__name__}: {e}"}
                fail(f"opcheck {ak.add_op_namespace_prefix(t)} {name}", f"{type(e).__name__}: {str(e)[:2000]}")
    REPORT["opcheck"] = rows


def abi_check(variant_dir):
    libraries = sorted(Path(variant_dir).rglob("*.so"))
    out = {"libraries": [str(p.relative_to(variant_dir)) for p in libraries]}
    exe = shutil.which("kernel-abi-check")
    if exe is not None:
        for lib in libraries:
            p = subprocess.run([exe, str(lib)], capture_output=True, text=True)
            out[str(lib.name)] = {"exit": p.returncode, "output": (p.stdout + p.stderr)[-3000:]}
            print(f"kernel-abi-check {lib.name}: exit {p.returncode}\n{p.stdout}{p.stderr}", flush=True)
            if p.returncode != 0:
                fail(f"kernel-abi-check {lib.name}", f"exit {p.returncode}")
    else:
        try:
            import kernel_abi_check as kac  # the same checks as its command, as a module
        except ImportError:
            out["skipped"] = "kernel-abi-check is not installed"
            print("kernel-abi-check: not installed", flush=True)
            REPORT["abi_check"] = out
            return
        for lib in libraries:
            obj = kac.ObjectFile(str(lib))
            found = {"python_abi_3.9": [str(v) for v in obj.check_python_abi("3.9")],
                     "manylinux_2_28": [str(v) for v in obj.check_manylinux("manylinux_2_28")]}
            out[str(lib.name)] = found
            print(f"kernel_abi_check {lib.name}: {json.dumps(found)[:3000]}", flush=True)
            if found["python_abi_3.9"]:
                fail(f"kernel_abi_check {lib.name} python abi3", f"{len(found['python_abi_3.9'])} findings: "
                     f"{found['python_abi_3.9'][:5]}")
            if found["manylinux_2_28"]:
                # The variant is built against the export machine's C library: it runs where that
                # one is as new (kernel-builder builds against an old one for the Hub). Said, not failed.
                print(f"NOTE kernel_abi_check {lib.name}: needs a newer C library than manylinux_2_28: "
                      f"{found['manylinux_2_28'][:5]}", flush=True)
    REPORT["abi_check"] = out


def wire_layer_names(modeling, raw_rotary, layers):
    """Gives the model's classes their layer names where transformers has not: transformers 5.17
    uses the `kernels` library only for versions below 0.17 (KERNELS_MAX_VERSION), so with 0.17
    installed its @use_kernel_forward_from_hub decorators are no-ops. The library's own API for
    third-party layers does what they would: replace_kernel_forward_from_hub on the RMSNorm, MLP and
    rotary-embedding classes, each with the name the export's layer mapping gives it
    (layers.layer_name: GateUpMLP for Phi3MLP's form, GatedMLP for the other MLPs); and the rotary helper
    wrapped as transformers wraps it (use_kernel_forward_from_hub on the function, attached to each
    attention module by use_kernelized_func). The rotary helper is the module's own (raw_rotary),
    not what our patch put in its place: kernelize checks a layer's forward against the signature of
    the function it wraps."""
    from kernels import replace_kernel_forward_from_hub, use_kernel_forward_from_hub
    said = {}
    for name in dir(modeling):
        cls = getattr(modeling, name)
        if isinstance(cls, type) and issubclass(cls, torch.nn.Module) and not hasattr(cls, "kernel_layer_name"):
            layer = layers.layer_name(cls)
            if layer is not None:
                replace_kernel_forward_from_hub(cls, layer)
                said[name] = layer
    rotary = raw_rotary
    if rotary is not None and not hasattr(rotary, "kernel_layer_name"):
        modeling.apply_rotary_pos_emb = use_kernel_forward_from_hub("rotary_pos_emb")(rotary)
        said["apply_rotary_pos_emb"] = "rotary_pos_emb"
    REPORT["layer_names"] = said
    print(f"layer names given: {said}", flush=True)
    return modeling.apply_rotary_pos_emb


def attach_rotary(model, func):
    """What use_kernelized_func does at construction: the function where kernelize finds it."""
    n = 0
    for m in model.modules():
        if type(m).__name__.endswith("Attention"):
            m.__dict__.setdefault("_kernel_funcs", {})["apply_rotary_pos_emb"] = func
            n += 1
    return n


def swapped(model, layers, func):
    """{layer: modules whose forward kernelize replaced with it}."""
    counts = {}
    for cls in (layers.RMSNorm, layers.GatedMLP, layers.GateUpMLP, layers.RotaryEmbedding):
        counts[cls.__name__] = sum(1 for m in model.modules()
                                   if getattr(m.__dict__.get("forward"), "__func__", None) is cls.forward)
    counts["RotaryPosEmb"] = int(getattr(func.__dict__.get("forward"), "__func__", None) is layers.RotaryPosEmb.forward)
    return counts


def time_rounds(entries, steps, warmup, rounds):
    """Median ms a step of each entry (name -> (state, step)), the entries interleaved round by
    round so that a drift of the GPU's clock falls on all alike, each run in its state (use()); the
    median of the rounds' medians and every round's."""
    from autokernel_ops._timing import time_steps  # the torch layout's, on the path once main put it there
    with torch.inference_mode():
        for name, (state, step) in list(entries.items()):
            USE(state)
            try:
                for _ in range(warmup):
                    step()
            except Exception as e:  # the others are still timed
                fail(f"{name} step", f"{type(e).__name__}: {str(e)[:500]}")
                del entries[name]
        torch.cuda.synchronize()
    times = {n: [] for n in entries}
    with torch.inference_mode():
        for _ in range(rounds):
            for name, (state, step) in entries.items():
                USE(state)
                times[name].append(time_steps(step, steps, 0)["median_ms"])
    USE("none")
    return {n: {"median_ms": statistics.median(t), "rounds_ms": t} for n, t in times.items()}


def states(patches, modeling, raw_rotary, func):
    """use(state): the model module as it is unpatched ("none"), with our patch ("patch": the same
    replacement objects every time, so a model compiled with them is not compiled again), or as
    kernelize's modules need it ("kernels": the patch off, the rotary helper the wrapped function
    kernelize swapped a layer into). Our patch replaces classes' forwards and module functions,
    kernelize the forwards of instances: one at a time."""
    installed = [(t, getattr(t.owner, t.attr), original) for t, original in patches.applied]

    def use(state):
        modeling.apply_rotary_pos_emb = raw_rotary
        for t, replacement, original in installed:
            setattr(t.owner, t.attr, replacement if state == "patch" else original)
        if state == "kernels":
            modeling.apply_rotary_pos_emb = func
    return use


USE = None


def main():
    global USE
    p = argparse.ArgumentParser()
    p.add_argument("--hf", required=True, help="what autokernel export --format hf-kernels wrote")
    p.add_argument("--torch-pkg", required=True, help="what autokernel export (torch layout) wrote, of the same run")
    p.add_argument("--model", required=True)
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-compile", action="store_true", help="eager rows only")
    p.add_argument("--json", required=True)
    a = p.parse_args()
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    import kernels
    from kernels import LocalLayerRepository, Mode, get_local_kernel, kernelize, use_kernel_mapping
    REPORT.update(torch=torch.__version__, kernels=kernels.__version__, gpu=torch.cuda.get_device_name(),
                  dtype=a.dtype)
    print(f"torch {torch.__version__}, kernels {kernels.__version__}, {torch.cuda.get_device_name()}", flush=True)
    for name in ("cache_size_limit", "recompile_limit"):  # a model compiled in three states
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)

    ak = get_local_kernel(Path(a.hf))
    loaded = kernels.get_loaded_kernels()[-1]
    variant = Path(ak.__file__).parent.parent
    REPORT.update(variant=variant.name, namespace=loaded.metadata.id, loaded=ak.LOADED, failed=ak.FAILED,
                  metadata_archs=loaded.metadata.backend.archs)
    print(f"get_local_kernel: {variant.name}, module {ak.__name__}, ops torch.ops.{loaded.metadata.id}: "
          f"loaded {ak.LOADED}, failed {ak.FAILED}", flush=True)
    if ak.__name__ != loaded.metadata.id or ak.add_op_namespace_prefix("x") != f"{loaded.metadata.id}::x":
        fail("namespace", f"module {ak.__name__}, ops {ak.add_op_namespace_prefix('x')}, metadata id {loaded.metadata.id}")
    if not ak.LOADED:
        fail("ops", f"none loaded: {ak.FAILED}")

    guarded("opcheck")(lambda: opcheck_all(ak, dtype))
    guarded("abi check")(lambda: abi_check(variant))

    sys.path.insert(0, a.torch_pkg)
    import autokernel_ops  # the torch layout: builds its extensions at the first import
    from autokernel_ops.verify import _MODULE, build, load_model_file, run  # the model as verify loads it
    module = load_model_file(a.model)
    REPORT["torch_layout_loaded"] = autokernel_ops.LOADED

    fp32_model, inputs = build(module, torch.float32)
    ref = run(fp32_model, inputs)
    del fp32_model
    torch.cuda.empty_cache()
    model, inputs = build(module, dtype)
    own = max_err(run(model, inputs), ref)
    errors = {"eager": own}

    def agree(name, out):
        err = max_err(out, ref)
        errors[name] = err
        print(f"{name}: max error {err:.4g} against fp32 (the model's own {own:.4g})", flush=True)
        if not err <= 2 * own:
            fail(f"{name} output", f"max error {err:.4g} against fp32, more than twice the model's own {own:.4g}")

    # The model's transformers module: where its MLP class is defined.
    modeling = sys.modules[next(type(m).__module__ for m in model.modules() if type(m).__name__.endswith("MLP"))]
    raw_rotary = modeling.apply_rotary_pos_emb
    patches = autokernel_ops.patch(also=(_MODULE,))
    REPORT["patched"] = list(patches.names)
    autokernel_ops.set_compile_ops(autokernel_ops.LOADED)  # every op under compilation, as kernelize does
    func = wire_layer_names(modeling, raw_rotary, ak.layers)
    USE = states(patches, modeling, raw_rotary, func)
    USE("none")

    # Kernelized: a second model of the same weights, with the layers of the hf-kernels build
    # (kernelize checks a layer's forward against the class's own: unpatched).
    kmodel, kinputs = build(module, dtype)
    attached = attach_rotary(kmodel, func)
    repo = lambda name: LocalLayerRepository(Path(a.hf), layer_name=name)  # noqa: E731
    mapping = {name: {"cuda": repo(layer)} for name, layer in ak.layers.LAYER_NAMES.items()}
    kernelized = []

    @guarded("kernelize")
    def _():
        with use_kernel_mapping(mapping):
            kernelize(kmodel, mode=Mode.INFERENCE, device="cuda", use_fallback=False)
            counts = swapped(kmodel, ak.layers, func)
            REPORT["kernelized_eager"] = counts
            print(f"kernelize (INFERENCE): {counts}, rotary attached to {attached} attention modules", flush=True)
            # Each layer some class of the model's module was named for (a Llama has no GateUpMLP).
            named = {ak.layers.LAYER_NAMES[n] for n in REPORT["layer_names"].values()}
            if not all(counts[layer] for layer in named):
                fail("kernelize", f"a layer was swapped into no module: {counts}, named {sorted(named)}")
            USE("kernels")
            agree("kernelized", run(kmodel, kinputs))
            USE("none")
            kernelize(kmodel, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cuda", use_fallback=False)
            REPORT["kernelized_compile"] = swapped(kmodel, ak.layers, func)
            kernelized.append(True)
    USE("patch")
    agree("patch", run(model, inputs))
    USE("none")

    entries = {"eager": ("none", lambda: model(*inputs)), "patch": ("patch", lambda: model(*inputs))}
    compiles = [("compiled", "none", model, inputs), ("patch compiled", "patch", model, inputs)]
    if kernelized:
        entries["kernelized"] = ("kernels", lambda: kmodel(*kinputs))
        compiles.append(("kernelized compiled", "kernels", kmodel, kinputs))
    if not a.no_compile:
        for name, state, m, x in compiles:
            @guarded(name)
            def _():
                USE(state)
                try:
                    c = torch.compile(m, fullgraph=True)
                    out = run(c, x)
                except Exception as e:
                    if name == "kernelized compiled":
                        raise  # the layers must compile as one graph
                    # A baseline that breaks the graph is still a baseline: said, and compiled so.
                    print(f"NOTE {name}: no full graph ({type(e).__name__}: {str(e)[:300]}); compiled with graph breaks",
                          flush=True)
                    torch._dynamo.reset()
                    c = torch.compile(m)
                    out = run(c, x)
                if name != "compiled":
                    agree(name, out)
                entries[name] = (state, lambda c=c, x=x: c(*x))
            USE("none")

    table = time_rounds(entries, a.steps, 3, a.rounds)
    REPORT.update(times=table, errors=errors)
    print(f"\n{'step':<22}{'median ms':>11}  {'max err vs fp32':>16}  rounds", flush=True)
    for name, row in table.items():
        err = errors.get(name)
        print(f"{name:<22}{row['median_ms']:11.3f}  {err if err is not None else float('nan'):16.4g}  "
              + " ".join(f"{t:.3f}" for t in row["rounds_ms"]))
    ratio = lambda x, y: table[x]["median_ms"] / table[y]["median_ms"] if x in table and y in table else float("nan")  # noqa: E731
    REPORT["ratios"] = {"kernelized/patch": ratio("kernelized", "patch"),
                        "kernelized compiled/patch compiled": ratio("kernelized compiled", "patch compiled"),
                        "patch/eager": ratio("patch", "eager"), "kernelized/eager": ratio("kernelized", "eager"),
                        "kernelized compiled/compiled": ratio("kernelized compiled", "compiled")}
    for k, v in REPORT["ratios"].items():
        print(f"{k}: {v:.3f}")
    for k in ("kernelized/patch", "kernelized compiled/patch compiled"):
        if REPORT["ratios"][k] > 1.02:
            print(f"NOTE {k} {REPORT['ratios'][k]:.3f}: more than 2% slower than our patch")
    REPORT["failures"] = FAILURES
    with open(a.json, "w") as f:
        json.dump(REPORT, f, indent=2, default=str)
    print(f"\n{len(FAILURES)} failures" + "".join(f"\n  {x}" for x in FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
