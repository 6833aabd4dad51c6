// schema: rotary_embedding(Tensor q, Tensor k, Tensor cos, Tensor sin) -> (Tensor, Tensor)
// transformers' apply_rotary_pos_emb(q, k, cos, sin) in one launch: x * cos + rotate_half(x) * sin
// for x = q [batch, q_heads, seq, head_dim] and k [batch, k_heads, seq, head_dim], taken where they
// lie (any strides with head_dim's 1: the transposed views of the projections, slices of a fused
// qkv), with cos and sin as the model has them ([seq, head_dim], [batch or 1, seq, head_dim], or
// that unsqueezed at dim 1). The results have the strides PyTorch's elementwise code gives them:
// dense, in q's (k's) order of dimensions. Version 2 of the rotary_embedding contract.
#include "common.h"
#include "rotary_tables.h"

#include <array>
#include <utility>

namespace autokernel_ops {
namespace {

/// `x`'s result, dense in its order, at `offset` elements into `buffer`.
at::Tensor dense_part(const at::Tensor& buffer, const at::Tensor& x, int64_t offset) {
  const std::array<int64_t, 4> strides = dense_strides(x);
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(buffer.storage()),
                                                   c10::DispatchKeySet(c10::DispatchKey::CUDA), buffer.dtype());
  impl->set_sizes_and_strides(x.sizes(), strides, offset);
  return at::Tensor(std::move(impl));
}

/// q's and k's results, each dense in its input's order. In eager calls from one call of the
/// caching allocator rather than two (a microsecond of CPU in a call that costs ten): k's part
/// starts on the next 256-byte boundary after q's, where an allocation of its own would, and the
/// two share one storage, as the results of torch.split do. Through the dispatcher (torch.compile's
/// graphs) each has a storage of its own: a registered op's results may not alias one another
/// (PyTorch 2.11 warns, and 2.12 refuses).
std::pair<at::Tensor, at::Tensor> dense_outputs(const at::Tensor& q, const at::Tensor& k, bool one_storage) {
  if (!one_storage) return {dense_part(empty({q.numel()}, q), q, 0), dense_part(empty({k.numel()}, k), k, 0)};
  const int64_t item = q.element_size();
  const int64_t k_offset = (q.numel() * item + 255) / 256 * 256 / item;
  const at::Tensor buffer = empty({k_offset + k.numel()}, q);
  return {dense_part(buffer, q, 0), dense_part(buffer, k, k_offset)};
}

/// cos or sin as [batch or 1, seq, head_dim], or an undefined tensor when it is not one of the
/// model's forms.
at::Tensor table_view(const at::Tensor& t, const at::Tensor& q) {
  at::Tensor v = t;
  if (v.dim() == 4 && v.size(1) == 1) v = v.squeeze(1);
  if (v.dim() == 2) v = v.unsqueeze(0);
  if (v.dim() != 3 || v.size(1) != q.size(2) || v.size(2) != q.size(3) || (v.size(0) != 1 && v.size(0) != q.size(0)))
    return {};
  return v;
}

/// Whether every element of `t` lies within 2^31 elements of its start: the kernel's ints.
bool int_offsets(const at::Tensor& t) {
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return last < INT32_MAX && t.numel() < INT32_MAX;
}

std::string why_not(const at::Tensor& q, const at::Tensor& k, const at::Tensor& c, const at::Tensor& s) {
  if (!q.is_cuda()) return "q is not on a CUDA device";
  if (dtype_code(q) < 0) return "q is " + std::string(c10::toString(q.scalar_type())) + ", not fp16, bf16 or fp32";
  if (q.dim() != 4 || k.dim() != 4) return "q or k is not [batch, heads, seq, head_dim]";
  if (k.size(0) != q.size(0) || k.size(2) != q.size(2) || k.size(3) != q.size(3)) return "q and k differ in batch, seq or head_dim";
  if (q.size(3) % 2) return "head_dim is odd";
  if (q.numel() == 0 || k.numel() == 0) return "q or k is empty";
  if (k.device() != q.device() || k.scalar_type() != q.scalar_type()) return "k has another device or dtype than q";
  if (q.stride(3) != 1 || k.stride(3) != 1) return "q's or k's head_dim is strided";
  if (!c.defined() || !s.defined()) return "cos or sin is not [seq, head_dim] or [batch, seq, head_dim]";
  for (const at::Tensor* t : {&c, &s})
    if (t->device() != q.device() || t->scalar_type() != q.scalar_type()) return "cos or sin has another device or dtype than q";
  if (c.stride(2) != 1 || c.strides() != s.strides() || c.sizes() != s.sizes()) return "cos and sin are not laid out alike";
  for (const at::Tensor* t : {&q, &k, &c, &s})
    if (!int_offsets(*t)) return "a tensor spans more than 2^31 elements";
  return "";
}

/// PyTorch's own computation, for the calls outside the kernel's contract.
std::tuple<at::Tensor, at::Tensor> composite(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                             const at::Tensor& sin) {
  auto table = [&](const at::Tensor& t) { return t.dim() == 3 ? t.unsqueeze(1) : t; };
  auto rotate = [](const at::Tensor& x) {
    const int64_t half = x.size(-1) / 2;
    return at::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
  };
  const at::Tensor c = table(cos), s = table(sin);
  return {q * c + rotate(q) * s, k * c + rotate(k) * s};
}

/// Whether the call is a half-precision q and k rotated by fp32 tables on their device, as OLMo2
/// and its kin make them: `q * cos` promotes to fp32 there, and the helper rounds the sums back to
/// q's dtype (`q_embed.to(q.dtype)`).
bool fp32_tables(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos, const at::Tensor& sin) {
  const auto t = q.scalar_type();
  return (t == at::kHalf || t == at::kBFloat16) && k.scalar_type() == t && cos.scalar_type() == at::kFloat &&
         sin.scalar_type() == at::kFloat && q.is_cuda() && k.device() == q.device() && cos.device() == q.device() &&
         sin.device() == q.device();
}

std::tuple<at::Tensor, at::Tensor> rotary_call(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                               const at::Tensor& sin, bool one_storage) {
  if (fp32_tables(q, k, cos, sin)) {
    // The kernel's fp32 entry computes what the model computes, in fp32 on q and k converted
    // exactly (every fp16 and bf16 value is an fp32 one), and the one rounding back is the model's
    // own. The conversions keep q's and k's strides (PyTorch's preserve_format), so the results are
    // laid out as the model's.
    auto [q32, k32] = rotary_call(q.to(at::kFloat), k.to(at::kFloat), cos, sin, false);
    return {q32.to(q.scalar_type()), k32.to(k.scalar_type())};
  }
  const at::Tensor c = table_view(cos, q), s = table_view(sin, q);
  if (std::string why = why_not(q, k, c, s); !why.empty()) {
    log_fallback("rotary_embedding", why);
    return composite(q, k, cos, sin);
  }
  const c10::cuda::CUDAGuard guard(q.device());
  auto [q_out, k_out] = dense_outputs(q, k, one_storage);
  const int64_t table_batch = c.size(0) == 1 ? 0 : c.stride(0);
  // The shape's dimensions (the layout code is the harness's; the launcher reads the strides),
  // then the strides in the order of the contract's arguments.
  const long long shape[] = {q.size(0), q.size(1), k.size(1), q.size(2), q.size(3), 0,
                             q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                             q_out.stride(0), q_out.stride(1), q_out.stride(2), k_out.stride(0), k_out.stride(1), k_out.stride(2),
                             table_batch, c.stride(1)};
  void* buffers[] = {q.data_ptr(), k.data_ptr(), c.data_ptr(), s.data_ptr(), q_out.data_ptr(), k_out.data_ptr()};
  check_launch("rotary_embedding", launch_rotary_embedding(buffers, shape, nullptr, dtype_code(q), stream()));
  return {q_out, k_out};
}

}  // namespace

/// The eager entry (the direct call): both results in one storage.
std::tuple<at::Tensor, at::Tensor> rotary_embedding(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                                    const at::Tensor& sin) {
  return rotary_call(q, k, cos, sin, true);
}

/// The registered op, which torch.compile's graphs call: results that alias nothing.
std::tuple<at::Tensor, at::Tensor> rotary_embedding_registered(const at::Tensor& q, const at::Tensor& k,
                                                               const at::Tensor& cos, const at::Tensor& sin) {
  return rotary_call(q, k, cos, sin, false);
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) {
  m.def("rotary_embedding(Tensor q, Tensor k, Tensor cos, Tensor sin) -> (Tensor, Tensor)");
}
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("rotary_embedding", &autokernel_ops::rotary_embedding_registered); }
AK_LOAD_OP(rotary_embedding)
AK_DIRECT_CALL(rotary_embedding, &autokernel_ops::rotary_embedding)
