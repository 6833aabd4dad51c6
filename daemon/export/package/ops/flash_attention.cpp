// schema: flash_attention(Tensor q, Tensor k, Tensor v, bool causal) -> Tensor
// F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True) at its default scale
// 1/sqrt(D), version 2 of the flash_attention contract: q [B, Hq, S, D], k and v [B, Hkv, S, D] with
// Hq a multiple of Hkv, each contiguous or the transposed view of a projection's [B, S, H, D], in
// the combinations the harness judged (attention_layouts.hpp's codes: 2 all views, 3 q a view with
// k and v contiguous, as a cache or repeat_kv leaves them, 1 all contiguous). o is dense in q's
// order of dimensions, as SDPA's flash path returns it. The kernel runs only at a shape (mask and
// layout codes included) one of the exported files was measured faster than SDPA at
// (pick_flash_attention, file_pick.h's exact rule); any other call is PyTorch's SDPA, laid out alike.
#include "common.h"

namespace autokernel_ops {
namespace {

enum Layout { kContiguous = 1, kProjection = 2, kCache = 3 };  // kernels_cuda/flash_attention/attention_layouts.hpp

using Strides = std::array<int64_t, 3>;  // batch, head, seq; D's is 1

Strides contiguous(const at::Tensor& t) { return {t.size(1) * t.size(2) * t.size(3), t.size(2) * t.size(3), t.size(3)}; }
Strides projection(const at::Tensor& t) { return {t.size(2) * t.size(1) * t.size(3), t.size(3), t.size(1) * t.size(3)}; }

/// Whether t lies as `want` says: D's stride 1, and `want`'s in every other dimension of more than
/// one element (PyTorch gives a dimension of one element any stride; the kernel is passed `want`'s).
bool lies_as(const at::Tensor& t, const Strides& want) {
  if (t.stride(3) != 1) return false;
  for (int d = 0; d < 3; ++d)
    if (t.size(d) != 1 && t.stride(d) != want[size_t(d)]) return false;
  return true;
}

/// The layout code of q (and o) with k and v, or 0 for a combination the harness never judged.
int layout_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  auto kv_as = [&](Strides (*of)(const at::Tensor&)) { return lies_as(k, of(k)) && lies_as(v, of(v)); };
  if (lies_as(q, projection(q))) {
    if (kv_as(&projection)) return kProjection;
    if (kv_as(&contiguous)) return kCache;
  }
  if (lies_as(q, contiguous(q)) && kv_as(&contiguous)) return kContiguous;
  return 0;
}

std::string why_not(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  if (!q.is_cuda()) return "q is not on a CUDA device";
  if (q.scalar_type() != at::kHalf && q.scalar_type() != at::kBFloat16)
    return "q is " + std::string(c10::toString(q.scalar_type())) + ", not fp16 or bf16";
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return "q, k or v is not [B, heads, S, D]";
  for (const at::Tensor* t : {&k, &v})
    if (t->device() != q.device() || t->scalar_type() != q.scalar_type()) return "k or v has another device or dtype than q";
  if (k.sizes() != v.sizes() || k.size(0) != q.size(0) || k.size(3) != q.size(3)) return "k and v are not [B, Hkv, S, D] for q's B and D";
  // Version 2 takes one length: a query shorter than the keys (a decode step, a chunk after a cache) is PyTorch's.
  if (k.size(2) != q.size(2)) return "q's length " + std::to_string(q.size(2)) + " is not k's " + std::to_string(k.size(2));
  if (q.numel() == 0 || k.numel() == 0) return "q or k is empty";
  if (q.size(1) % k.size(1)) return "Hq " + std::to_string(q.size(1)) + " is not a multiple of Hkv " + std::to_string(k.size(1));
  // What a file of unknown tuned shape (which serves any call) was judged on: the stages' head
  // dimensions, and the contract's lengths (attention_layouts.cpp's shape_error).
  if (q.size(3) != 64 && q.size(3) != 128) return "D " + std::to_string(q.size(3)) + " is not 64 or 128, the head dimensions the kernel is judged at";
  if (q.size(2) > 8192) return "S " + std::to_string(q.size(2)) + " is past 8192, the longest the contract judges";
  if (q.numel() > INT32_MAX || k.numel() > INT32_MAX) return "q or k has more than 2^31 elements";
  // A base TMA cannot map sends the kernel down a path the harness never took for this type.
  for (const at::Tensor* t : {&q, &k, &v})
    if (reinterpret_cast<uintptr_t>(t->data_ptr()) % 16) return "q's, k's or v's data is not 16-byte aligned";
  if (!layout_of(q, k, v))
    return "q, k and v are not laid out as the kernel was judged: each contiguous or the transposed view of a "
           "projection's [B, S, H, D] (D's stride 1), q so if k and v are";
  return "";
}

/// An uninitialised o dense in q's order of dimensions: what the fake gives (_fakes.py).
at::Tensor dense_output(const at::Tensor& q) {
  const std::array<int64_t, 4> strides = dense_strides(q);
  return at::Tensor(at::detail::empty_strided_cuda(q.sizes(), strides, q.scalar_type(), q.device()));
}

at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  const bool gqa = q.dim() == 4 && k.dim() == 4 && q.size(1) != k.size(1);
  at::Tensor r = at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal, std::nullopt, gqa);
  if (r.dim() != 4 || !r.is_cuda()) return r;  // an error PyTorch did not raise, or a CPU call: as it is
  const std::array<int64_t, 4> strides = dense_strides(q);
  if (r.strides() == c10::IntArrayRef(strides.data(), strides.size())) return r;
  at::Tensor o = dense_output(q);
  o.copy_(r);
  return o;
}

}  // namespace

at::Tensor flash_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  std::string why = why_not(q, k, v);
  const int layout = why.empty() ? layout_of(q, k, v) : 0;
  long long shape[20] = {};
  if (why.empty()) {
    shape[0] = q.size(0), shape[1] = q.size(1), shape[2] = k.size(1), shape[3] = q.size(2), shape[4] = q.size(3);
    shape[5] = causal ? 1 : 2, shape[6] = layout, shape[7] = causal ? 1 : 0;
    // The strides of the layout, after the codes and the causal flag, in the order of the contract's
    // arguments (q, k, v, o): o as q, v as k.
    const Strides qs = layout == kContiguous ? contiguous(q) : projection(q), ks = layout == kProjection ? projection(k) : contiguous(k);
    for (int i = 0; i < 3; ++i)
      shape[8 + i] = shape[17 + i] = qs[size_t(i)], shape[11 + i] = shape[14 + i] = ks[size_t(i)];
    if (pick_flash_attention(shape, dtype_code(q)) < 0)
      why = "no exported file was measured faster at B " + std::to_string(shape[0]) + ", Hq " + std::to_string(shape[1]) +
            ", Hkv " + std::to_string(shape[2]) + ", S " + std::to_string(shape[3]) + ", D " + std::to_string(shape[4]) +
            (causal ? ", causal" : ", no mask") + ", layout " + std::to_string(layout) + " in " +
            std::string(c10::toString(q.scalar_type()));
  }
  if (!why.empty()) {
    log_fallback("flash_attention", why);
    return sdpa(q, k, v, causal);
  }
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = dense_output(q);
  // o is dense in q's order, which for q's layout is the strides passed for it; said, never assumed.
  TORCH_CHECK(lies_as(o, layout == kContiguous ? contiguous(o) : projection(o)), "autokernel_ops: flash_attention: o's strides");
  void* buffers[] = {q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()};
  check_launch("flash_attention", launch_flash_attention(buffers, shape, nullptr, dtype_code(q), stream()));
  return o;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("flash_attention(Tensor q, Tensor k, Tensor v, bool causal) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("flash_attention", &autokernel_ops::flash_attention); }
AK_LOAD_OP(flash_attention)
AK_DIRECT_CALL(flash_attention, &autokernel_ops::flash_attention)
