"""The exported tensor-core ops on a GPU, run by tests/daemon/export/export_package_test.cpp ([gpu])
on a package exported from a run folder holding a kept matmul (version 2, the tma_warp_specialized
variant, tuned at M 4096, N 2048, K 2048 without bias, fp16) and a kept fused_mlp (tma_swiglu, at
M 4096, K 2048, I 6144, fp16):

  matmul op      at the tuned shape the kernel runs (matmul_launches grows by one) and agrees with
                 F.linear; with a bias, one token fewer, or in bf16 PyTorch's F.linear runs (no
                 launch) and the result is F.linear's own
  fused_mlp op   at the tuned shape one launch, the MLP's value; elsewhere PyTorch's three GEMMs
  the decoder    tiny_decoder.py patched: its q/k/v/o projections served by matmul, its DecoderMLP by
                 fused_mlp, the LM head by PyTorch; the output within twice the unpatched model's
                 own error against fp32; capture() replays the patched step with the same output

    PYTHONPATH=PKG python3 tests/daemon/export/gpu_tensor_core_check.py
Prints one line per check, what was expected and what was seen; exit 0 only when all hold."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import autokernel_ops  # noqa: E402
import tiny_decoder  # noqa: E402

failures = []


def check(what, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(what)


def launches(type_):
    return sum(getattr(torch.ops.autokernel, f"{type_}_launches")())


def rel_l2(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def loaded():
    for t in ("matmul", "fused_mlp"):
        check(f"{t} built and loaded at import", t in autokernel_ops.LOADED,
              f"loaded {sorted(autokernel_ops.LOADED)}, failed {autokernel_ops.FAILED}")
    return all(t in autokernel_ops.LOADED for t in ("matmul", "fused_mlp"))


def matmul_op():
    torch.manual_seed(1)
    x = torch.randn(2, 2048, 2048, device="cuda", dtype=torch.float16)
    w = torch.randn(2048, 2048, device="cuda", dtype=torch.float16) * 2048 ** -0.5
    b = torch.randn(2048, device="cuda", dtype=torch.float16)
    ref = F.linear(x.float(), w.float())
    before = launches("matmul")
    y = torch.ops.autokernel.matmul(x, w, None)
    torch.cuda.synchronize()
    grew = launches("matmul") - before
    check("matmul at M 4096 N 2048 K 2048 fp16 launches the kept file once", grew == 1, f"{grew} launches")
    err = rel_l2(y, ref)
    check("matmul at the tuned shape agrees with F.linear in fp32", y.shape == (2, 2048, 2048) and err < 2e-3,
          f"shape {tuple(y.shape)}, relative L2 error {err:.2e} (cuBLAS in fp16: {rel_l2(F.linear(x, w), ref):.2e})")
    cases = {"with a bias": (x, w, b), "with one token fewer": (x.reshape(4096, 2048)[:4095], w, None),
             "in bf16": (x.bfloat16(), w.bfloat16(), None)}
    for name, (xx, ww, bb) in cases.items():
        before = launches("matmul")
        y = torch.ops.autokernel.matmul(xx, ww, bb)
        torch.cuda.synchronize()
        grew = launches("matmul") - before
        same = torch.equal(y, F.linear(xx, ww, bb))
        check(f"matmul {name}: PyTorch's F.linear, no launch", grew == 0 and same, f"{grew} launches, equal to F.linear: {same}")


def fused_mlp_op():
    torch.manual_seed(2)
    x = torch.randn(4096, 2048, device="cuda", dtype=torch.float16)
    wg, wu = (torch.randn(2048, 6144, device="cuda", dtype=torch.float16) * 2048 ** -0.5 for _ in range(2))
    wd = torch.randn(6144, 2048, device="cuda", dtype=torch.float16) * 6144 ** -0.5
    ref = (F.silu(x.float() @ wg.float()) * (x.float() @ wu.float())) @ wd.float()
    before = launches("fused_mlp")
    y = torch.ops.autokernel.fused_mlp(x, wg, wu, wd)
    torch.cuda.synchronize()
    grew = launches("fused_mlp") - before
    check("fused_mlp at M 4096 K 2048 I 6144 fp16 launches the kept file once", grew == 1, f"{grew} launches")
    err = rel_l2(y, ref)
    check("fused_mlp agrees with the MLP in fp32", err < 5e-3, f"relative L2 error {err:.2e}")
    before = launches("fused_mlp")
    y = torch.ops.autokernel.fused_mlp(x[:100], wg, wu, wd)
    torch.cuda.synchronize()
    grew = launches("fused_mlp") - before
    err = rel_l2(y, ref[:100])
    check("fused_mlp at 100 rows: PyTorch's GEMMs, no launch", grew == 0 and err < 5e-3, f"{grew} launches, error {err:.2e}")


def decoder():
    torch.manual_seed(0)
    reference, (ids,) = tiny_decoder.build(torch.float32)
    torch.manual_seed(0)
    model, _ = tiny_decoder.build(torch.float16)
    with torch.inference_mode():
        want = reference(ids).float()
        del reference
        eager = model(ids)
        own = rel_l2(eager, want)
        with autokernel_ops.patched(also=("tiny_decoder",)) as p:
            names = p.names
            check("the patch replaces F.linear and the decoder's MLP class",
                  "torch.nn.functional.linear -> autokernel::matmul" in names
                  and "tiny_decoder.DecoderMLP.forward -> autokernel::fused_mlp" in names, str(names))
            model(ids)  # the first call checks the MLP class's replacement against its own forward
            torch.cuda.synchronize()
            m0, f0 = launches("matmul"), launches("fused_mlp")
            patched = model(ids)
            torch.cuda.synchronize()
            m, f = launches("matmul") - m0, launches("fused_mlp") - f0
            layers = tiny_decoder.LAYERS
            check(f"one step: matmul served the {4 * layers} q/k/v/o projections, fused_mlp the {layers} MLPs",
                  m == 4 * layers and f == layers,
                  f"matmul {m} launches (want {4 * layers}), fused_mlp {f} (want {layers}); the gate, up and down "
                  "projections go inside fused_mlp and the LM head to PyTorch")
            err = rel_l2(patched, want)
            bound = max(2 * own, 2 * 2 ** -10)
            check("the patched decoder's output agrees with fp32 as well as eager fp16 does",
                  bool(torch.isfinite(patched).all()) and err <= bound,
                  f"relative L2 {err:.3e}, eager fp16's own {own:.3e}, bound {bound:.3e}")
            try:
                step = autokernel_ops.capture(model, (ids,))
                replayed = step(ids).float().clone()
                err = rel_l2(replayed, want)
                check("capture() replays the patched step with the ops", err <= bound,
                      f"relative L2 {err:.3e}, bound {bound:.3e}")
            except Exception as e:  # CaptureError or a CUDA error: said, and a failure
                check("capture() replays the patched step with the ops", False, f"{type(e).__name__}: {e}")


if loaded():
    matmul_op()
    fused_mlp_op()
    decoder()
print(f"{len(failures)} failures" + (": " + "; ".join(failures) if failures else ""))
sys.exit(1 if failures else 0)
