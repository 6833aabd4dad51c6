"""The model runs behind `autokernel verify`: one model with and without the exported ops, against
its own fp32 output, and timed. Writes a JSON report; the verdict is autokernel's (the C++ side).

A model file follows one convention: it defines

    def build(dtype):            # torch.float32, float16 or bfloat16
        return model, inputs     # model(*inputs) is one step; same weights for every dtype

build is called with the seed set to 0 before each call, so a model that draws its weights at
random draws the same ones each time.

    python3 -m autokernel_ops.verify --model FILE --json OUT [--dtype fp16] [--steps 30] [--compile]
"""
import argparse
import importlib.util
import json
import statistics
import sys

import torch

import autokernel_ops

_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
_MODULE = "autokernel_verify_model"


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


def time_steps(model, inputs, steps, warmup):
    """Milliseconds of each of `steps` forward passes, CUDA events around each, after warm-up."""
    with torch.inference_mode():
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "steps": steps}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--dtype", default="fp16", choices=sorted(_DTYPES))
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--compile", action="store_true", help="also time torch.compile of the model, without and with the ops")
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
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
    eager_out = run(model, inputs)
    report["eager"] = {**error(eager_out, ref), **time_steps(model, inputs, a.steps, a.warmup)}
    if a.compile:
        compiled = torch.compile(model, mode=a.compile_mode)
        report["compile"] = {**error(run(compiled, inputs), ref), **time_steps(compiled, inputs, a.steps, a.warmup)}
        torch._dynamo.reset()

    with autokernel_ops.patched(also=(_MODULE,)) as patches:
        report["patched"] = patches.names
        ours = run(model, inputs)  # the first eager call: class and helper replacements check themselves here
        ours = run(model, inputs)
        report["autokernel"] = {**error(ours, ref), **time_steps(model, inputs, a.steps, a.warmup)}
        if a.compile:
            compiled = torch.compile(model, mode=a.compile_mode)
            report["autokernel_compile"] = {**error(run(compiled, inputs), ref),
                                            **time_steps(compiled, inputs, a.steps, a.warmup)}
            torch._dynamo.reset()
    with open(a.json, "w") as f:
        json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
