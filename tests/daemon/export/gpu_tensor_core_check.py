"""The exported tensor-core ops on a GPU, run by tests/daemon/export/export_package_test.cpp ([gpu])
on a package exported from a run folder holding a kept matmul (version 2, the tma_warp_specialized
variant, tuned at M 4096, N 2048, K 2048 without bias, fp16), a kept fused_mlp (tma_swiglu, at
M 4096, K 2048, I 6144, fp16) and a kept flash_attention (version 2, tma_pingpong, at the decoder's
B 2, Hq 16, Hkv 4, S 2048, D 128, causal, the projections' views: 2x16x4x2048x128x1x2, fp16):

  matmul op      at the tuned shape the kernel runs (matmul_launches grows by one) and agrees with
                 F.linear; with a bias, one token fewer, or in bf16 PyTorch's F.linear runs (no
                 launch) and the result is F.linear's own
  fused_mlp op   at the tuned shape one launch, the MLP's value; elsewhere PyTorch's three GEMMs
  attention op   on the projections' transposed views with 4 kv heads, one launch, SDPA's value
                 (enable_gqa) within twice SDPA's own fp16 error, o laid out as SDPA's flash path
                 lays it; not causal, in bf16, one token fewer, q contiguous, or k and v repeated to
                 16 heads: PyTorch's SDPA, no launch, its very result; the time of a call of the op
                 and of SDPA, printed
  the decoder    tiny_decoder.py patched: its q and o projections served by matmul (k and v, at
                 [4096, 512, 2048], and the LM head by PyTorch), its DecoderMLP by fused_mlp, its
                 SDPA calls by flash_attention; the output within twice the unpatched model's own
                 error against fp32; capture() replays the patched step with the same output

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


TYPES = ("matmul", "fused_mlp", "flash_attention")


def loaded():
    for t in TYPES:
        check(f"{t} built and loaded at import", t in autokernel_ops.LOADED,
              f"loaded {sorted(autokernel_ops.LOADED)}, failed {autokernel_ops.FAILED}")
    return all(t in autokernel_ops.LOADED for t in TYPES)


def us_per_call(fn, calls=20):
    """The GPU time of one call of fn, from CUDA events around `calls` calls after one warm-up."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / calls


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


def attention_op():
    torch.manual_seed(3)
    b, s, hq, hkv, d = tiny_decoder.BATCH, tiny_decoder.SEQ, tiny_decoder.HEADS, tiny_decoder.KV_HEADS, tiny_decoder.HEAD_DIM
    # The projections' outputs viewed as heads, as the decoder passes them.
    q = torch.randn(b, s, hq * d, device="cuda", dtype=torch.float16).view(b, s, hq, d).transpose(1, 2)
    k, v = (torch.randn(b, s, hkv * d, device="cuda", dtype=torch.float16).view(b, s, hkv, d).transpose(1, 2) for _ in range(2))
    sdpa = F.scaled_dot_product_attention
    ref = sdpa(q.float(), k.float(), v.float(), is_causal=True, enable_gqa=True)
    op = torch.ops.autokernel.flash_attention
    before = launches("flash_attention")
    o = op(q, k, v, True)
    torch.cuda.synchronize()
    grew = launches("flash_attention") - before
    check("flash_attention at 2x16x4x2048x128 causal on the projections' views launches the kept file once", grew == 1,
          f"{grew} launches")
    own = rel_l2(sdpa(q, k, v, is_causal=True, enable_gqa=True), ref)
    err = rel_l2(o, ref)
    check("flash_attention agrees with SDPA in fp32 as well as SDPA in fp16 does", err <= max(2 * own, 2 ** -8),
          f"relative L2 error {err:.2e}, SDPA fp16's own {own:.2e}")
    check("flash_attention's o is laid out as [B, S, H, D] transposed, as SDPA's flash path gives it",
          o.shape == q.shape and o.transpose(1, 2).is_contiguous(), f"shape {tuple(o.shape)}, strides {o.stride()}")
    cases = {"not causal": (q, k, v, False), "in bf16": (q.bfloat16(), k.bfloat16(), v.bfloat16(), True),
             "one token fewer": (q[:, :, 1:], k[:, :, 1:], v[:, :, 1:], True),
             "with q contiguous": (q.contiguous(), k, v, True),
             "with k and v repeated to 16 heads (repeat_kv)": (q, k.repeat_interleave(hq // hkv, 1),
                                                              v.repeat_interleave(hq // hkv, 1), True)}
    for name, (qq, kk, vv, causal) in cases.items():
        before = launches("flash_attention")
        y = op(qq, kk, vv, causal)
        torch.cuda.synchronize()
        grew = launches("flash_attention") - before
        want = sdpa(qq, kk, vv, is_causal=causal, enable_gqa=kk.shape[1] != qq.shape[1])
        same = torch.equal(y, want)
        check(f"flash_attention {name}: PyTorch's SDPA, no launch", grew == 0 and same,
              f"{grew} launches, equal to SDPA: {same}")
    mine = us_per_call(lambda: op(q, k, v, True))
    theirs = us_per_call(lambda: sdpa(q, k, v, is_causal=True, enable_gqa=True))
    print(f"     flash_attention op {mine:.1f} us a call, SDPA {theirs:.1f} us ({theirs / mine:.3f}x) at 2x16x4x2048x128 "
          "causal fp16, CUDA events over 20 calls", flush=True)


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
            check("the patch replaces F.linear, SDPA and the decoder's MLP class",
                  "torch.nn.functional.linear -> autokernel::matmul" in names
                  and "torch.nn.functional.scaled_dot_product_attention -> autokernel::flash_attention" in names
                  and "tiny_decoder.DecoderMLP.forward -> autokernel::fused_mlp" in names, str(names))
            model(ids)  # the first call checks the MLP class's replacement against its own forward
            torch.cuda.synchronize()
            m0, f0, a0 = launches("matmul"), launches("fused_mlp"), launches("flash_attention")
            patched = model(ids)
            torch.cuda.synchronize()
            m, f, a = launches("matmul") - m0, launches("fused_mlp") - f0, launches("flash_attention") - a0
            layers = tiny_decoder.LAYERS
            check(f"one step: matmul served the {2 * layers} q and o projections, fused_mlp the {layers} MLPs, "
                  f"flash_attention the {layers} SDPA calls",
                  m == 2 * layers and f == layers and a == layers,
                  f"matmul {m} launches (want {2 * layers}), fused_mlp {f} (want {layers}), flash_attention {a} "
                  f"(want {layers}); the k and v projections and the LM head go to PyTorch, the gate, up and down "
                  "projections inside fused_mlp")
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
    attention_op()
    decoder()
print(f"{len(failures)} failures" + (": " + "; ".join(failures) if failures else ""))
sys.exit(1 if failures else 0)
