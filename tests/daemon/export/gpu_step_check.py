"""The export's step features on a GPU, run by tests/daemon/export/export_package_test.cpp ([gpu]) on a
package of two rmsnorm files (tuned at 4096x2048 and at 65536x128), the rotary starter and two
swiglu files (the starter tuned at 4096x8192x16384, Phi-3 mini's MLP, and at 4096x5632x5632):

  per-shape dispatch   each call launches the file its shape picks (rmsnorm_pick, rmsnorm_launches),
                       with PyTorch's result
  fp32 rotary tables   fp16/bf16 q and k rotated by fp32 cos and sin (OLMo2's helper) run the kernel
                       and give the model's values and dtype; the tables op makes fp32 tables
  fused gate_up        swiglu on the halves of one [.., 2 I] projection (chunk(2, dim=-1): views
                       rows 2 I apart) runs the kernel where they lie, with PyTorch's result; an
                       MLP of Phi3MLP's form (and transformers' Phi3MLP where installed), patched,
                       gives its own output with the op serving every call
  capture()            a patched model's step replayed as a CUDA graph gives eager's output, a new
                       shape captures again, a step that syncs is refused with CaptureError; with
                       transformers installed, a LLaMA captured keeps SDPA on is_causal=True

    PYTHONPATH=PKG python3 tests/daemon/export/gpu_step_check.py
Prints one line per check; exit 0 only when all hold."""
import sys

import torch
import torch.nn.functional as F

import autokernel_ops

failures = []


def check(what, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}")
    if not ok:
        failures.append(what)


def launches(type_):
    return list(getattr(torch.ops.autokernel, f"{type_}_launches")())


def per_shape_dispatch():
    files = next(op for op in autokernel_ops.MANIFEST["ops"] if op["type"] == "rmsnorm")["files"]
    check("the manifest lists both rmsnorm files", len(files) == 2, str([f["shape"] for f in files]))
    for rows, cols, want in ((4096, 2048, 0), (65536, 128, 1), (16384, 128, 1), (8, 2048, 0)):
        for dtype in (torch.float16, torch.bfloat16):
            x = torch.randn(rows, cols, device="cuda", dtype=dtype)
            w = torch.randn(cols, device="cuda", dtype=dtype)
            before = launches("rmsnorm")
            y = torch.ops.autokernel.rmsnorm(x, w, 1e-6)
            torch.cuda.synchronize()
            grew = [b - a for a, b in zip(before, launches("rmsnorm"))]
            picked = torch.ops.autokernel.rmsnorm_pick([rows, cols], 0 if dtype == torch.float16 else 1)
            ref = F.rms_norm(x.float(), (cols,), w.float(), 1e-6)
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-2  # docs/design.md's tolerances (atol = rtol)
            err = (y.float() - ref).abs().max().item()
            check(f"rmsnorm {rows}x{cols} {dtype}: file {want} launched, as picked", grew == [int(i == want) for i in range(2)]
                  and picked == want, f"launches {grew}, pick {picked}")
            check(f"rmsnorm {rows}x{cols} {dtype}: PyTorch's result", torch.allclose(y.float(), ref, rtol=tol, atol=tol),
                  f"max |diff| {err:.2e}")


def swiglu_on_fused_halves():
    # Each call's shape is [rows, cols, ld]; the last is nearer the LLaMA file by file_pick.h's rule.
    for shape, want, dense in (((2, 2048, 8192), 0, False), ((4096, 5632), 1, True), ((3, 5, 1000), 1, False)):
        for dtype in (torch.float16, torch.bfloat16):
            if dense:
                gate, up = (torch.randn(*shape, device="cuda", dtype=dtype) for _ in range(2))
            else:
                gate, up = torch.randn(*shape[:-1], 2 * shape[-1], device="cuda", dtype=dtype).chunk(2, dim=-1)
            before = launches("swiglu")
            y = torch.ops.autokernel.swiglu(gate, up)
            torch.cuda.synchronize()
            grew = [b - a for a, b in zip(before, launches("swiglu"))]
            rows, cols = gate.numel() // gate.shape[-1], gate.shape[-1]
            ld = cols if dense else 2 * cols
            picked = torch.ops.autokernel.swiglu_pick([rows, cols, ld], 0 if dtype == torch.float16 else 1)
            ref = up.float() * F.silu(gate.float())  # Phi3MLP's order: the same fp32 product
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-2
            form = "dense" if dense else "halves of"
            check(f"swiglu {form} {'x'.join(map(str, shape))} {dtype}: file {want} launched, as picked",
                  grew == [int(i == want) for i in range(2)] and picked == want, f"launches {grew}, pick {picked}")
            check(f"swiglu {form} {'x'.join(map(str, shape))} {dtype}: PyTorch's result, dense", y.is_contiguous()
                  and tuple(y.shape) == tuple(shape) and torch.allclose(y.float(), ref, rtol=tol, atol=tol),
                  f"max |diff| {(y.float() - ref).abs().max().item():.2e}")


class Phi3LikeMLP(torch.nn.Module):
    """transformers' Phi3MLP forward: one gate_up_proj, its halves gate and up, SiLU on the gate."""

    def __init__(self, d, i):
        super().__init__()
        self.gate_up_proj, self.down_proj = torch.nn.Linear(d, 2 * i, bias=False), torch.nn.Linear(i, d, bias=False)
        self.activation_fn = torch.nn.SiLU()

    def forward(self, hidden_states):
        up_states = self.gate_up_proj(hidden_states)
        gate, up_states = up_states.chunk(2, dim=-1)
        return self.down_proj(up_states * self.activation_fn(gate))


def phi3_mlp_patched():
    sys.modules["__main__"].Phi3LikeMLP = Phi3LikeMLP  # a model class the patch looks for
    Phi3LikeMLP.__module__ = "__main__"
    models = {"Phi3LikeMLP": Phi3LikeMLP(1024, 2816)}
    try:
        from transformers import Phi3Config
        from transformers.models.phi3.modeling_phi3 import Phi3MLP
        models["Phi3MLP"] = Phi3MLP(Phi3Config(hidden_size=1024, intermediate_size=2816, hidden_act="silu"))
    except Exception as e:
        print(f"skip transformers' Phi3MLP: {type(e).__name__}: {e}")
    for name, model in models.items():
        for dtype in (torch.float16, torch.bfloat16):
            m = model.cuda().to(dtype).eval()
            x = torch.randn(2, 64, 1024, device="cuda", dtype=dtype)
            with torch.no_grad():
                want = m(x)
                with autokernel_ops.patched() as p:
                    first = m(x)
                    before = sum(launches("swiglu"))
                    later = [m(x) for _ in range(3)]
                    torch.cuda.synchronize()
                    served = sum(launches("swiglu")) - before
                    patched = any(f".{type(m).__name__}.forward" in n for n in p.names)
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-2
            same = all(torch.allclose(y.float(), want.float(), rtol=tol, atol=tol) for y in [first] + later)
            check(f"{name} {dtype} patched: the op serves each call with the model's own output",
                  patched and served == 3 and same, f"patched {patched}, swiglu launches {served} of 3 calls")


def olmo2_rotary(q, k, cos, sin):
    """transformers' OLMo2 helper: fp32 tables promote q and k, one rounding back."""
    def rotate(x):
        return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    return ((q * c) + (rotate(q) * s)).to(q.dtype), ((k * c) + (rotate(k) * s)).to(k.dtype)


def fp32_rotary_tables():
    b, hq, hk, s, d = 2, 16, 4, 256, 128
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, device="cuda", dtype=torch.float32) / d))
    positions = torch.arange(s, device="cuda")[None].expand(b, -1)
    emb = torch.cat([positions[..., None].float() * inv_freq] * 2, dim=-1)
    cos, sin = emb.cos(), emb.sin()  # fp32, [b, s, d], as OLMo2's class returns them
    for dtype in (torch.float16, torch.bfloat16):
        q = torch.randn(b, s, hq, d, device="cuda", dtype=dtype).transpose(1, 2)
        k = torch.randn(b, s, hk, d, device="cuda", dtype=dtype).transpose(1, 2)
        before = launches("rotary_embedding")
        q_out, k_out = torch.ops.autokernel.rotary_embedding(q, k, cos, sin)
        torch.cuda.synchronize()
        ran = sum(launches("rotary_embedding")) - sum(before)
        q_ref, k_ref = olmo2_rotary(q, k, cos, sin)
        ulp = 2 ** -10 if dtype == torch.float16 else 2 ** -7
        err = max(((q_out.float() - q_ref.float()).abs() / q_ref.float().abs().clamp_min(1)).max().item(),
                  ((k_out.float() - k_ref.float()).abs() / k_ref.float().abs().clamp_min(1)).max().item())
        check(f"rotary {dtype} q, k with fp32 tables: the kernel ran", ran == 1, f"{ran} launches")
        check(f"rotary {dtype} q, k with fp32 tables: the model's dtype and values", q_out.dtype == dtype
              and k_out.dtype == dtype and err <= ulp, f"max error {err:.2e} against one ulp {ulp:.1e}")
        tables = torch.ops.autokernel.rotary_tables(inv_freq, positions, torch.empty(0, device="cuda"), 1.0)
        check(f"rotary tables asked for fp32 are fp32 and the class's values", tables[0].dtype == torch.float32
              and torch.allclose(tables[0], cos, atol=1e-5) and torch.allclose(tables[1], sin, atol=1e-5))


class TinyRMSNorm(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))
        self.variance_epsilon = 1e-6

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class TinyModel(torch.nn.Module):
    def __init__(self, d=2048, heads=16):
        super().__init__()
        self.norm, self.proj, self.heads = TinyRMSNorm(d), torch.nn.Linear(d, 3 * d), heads

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.proj(self.norm(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)


def capture_mode():
    sys.modules["__main__"].TinyRMSNorm = TinyRMSNorm  # a model class the patch looks for
    model = TinyModel().cuda().half().eval()
    x = torch.randn(2, 512, 2048, device="cuda", dtype=torch.float16)
    with autokernel_ops.patched() as p, torch.inference_mode():
        check("capture: the tiny model's norm is patched", any("TinyRMSNorm" in n for n in p.names), str(p.names))
        eager = model(x).clone()
        step = autokernel_ops.capture(model, (x,))
        before = launches("rmsnorm")
        out = step(x)
        torch.cuda.synchronize()
        check("capture: the replay gives eager's output", torch.allclose(out.float(), eager.float(), atol=2e-3, rtol=2e-3),
              f"max |diff| {(out.float() - eager.float()).abs().max().item():.2e}")
        check("capture: the replay launches no file from the host", launches("rmsnorm") == before)
        x2 = torch.randn(2, 512, 2048, device="cuda", dtype=torch.float16)
        check("capture: new inputs of the same shape are copied in", torch.allclose(step(x2).float(), model(x2).float(),
                                                                                   atol=2e-3, rtol=2e-3))
        x3 = torch.randn(1, 256, 2048, device="cuda", dtype=torch.float16)
        out3 = step(x3)
        check("capture: another shape captures a graph of its own", len(step.graphs) == 2 and out3.shape == (1, 256, 2048))

        class Syncs(torch.nn.Module):
            def forward(self, x):
                return x * float(x.sum().item())
        try:
            autokernel_ops.capture(Syncs(), (x,))
            check("capture: a step that syncs with the host is refused", False, "it captured")
        except autokernel_ops.CaptureError as e:
            check("capture: a step that syncs with the host is refused, saying why", "cannot be captured" in str(e), str(e)[:120])


def causal_in_transformers():
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except Exception as e:
        print(f"skip transformers' causal mask under capture: {type(e).__name__}: {e}")
        return
    config = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=1000, attn_implementation="sdpa", use_cache=False)
    model = LlamaForCausalLM(config).cuda().half().eval()
    ids = torch.randint(0, 1000, (2, 128), device="cuda")
    seen = []
    sdpa = F.scaled_dot_product_attention

    def recording(*args, **kwargs):
        if torch.cuda.is_current_stream_capturing():
            seen.append((kwargs.get("attn_mask") is None, bool(kwargs.get("is_causal"))))
        return sdpa(*args, **kwargs)
    with torch.inference_mode():
        eager = model(ids).logits.float()
    F.scaled_dot_product_attention = recording
    try:
        for causal in (False, True):
            seen.clear()
            step = autokernel_ops.capture(model, (ids,), causal_sdpa=causal)
            out = step(ids).logits.float()
            torch.cuda.synchronize()
            agree = torch.allclose(out, eager, atol=3e-2, rtol=3e-2)
            if causal:
                check("transformers under capture(): SDPA gets no mask and is_causal=True", seen and all(m and c for m, c in seen)
                      and step.causal_sdpa_installed and agree, f"(no mask, is_causal) per call {seen}")
            else:
                check("transformers under a plain capture builds a mask (what capture() avoids)", seen and not any(c for _, c in seen)
                      and agree, f"{seen}")
    finally:
        F.scaled_dot_product_attention = sdpa


def main():
    check("the package's ops loaded", not autokernel_ops.FAILED and {"rmsnorm", "rotary_embedding", "swiglu"} <= set(autokernel_ops.LOADED),
          f"loaded {autokernel_ops.LOADED}, failed {autokernel_ops.FAILED}")
    if failures:
        return 1
    torch.manual_seed(0)
    per_shape_dispatch()
    fp32_rotary_tables()
    swiglu_on_fused_halves()
    phi3_mlp_patched()
    causal_in_transformers()
    capture_mode()  # last: it ends with a capture that fails
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
