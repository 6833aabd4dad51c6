// schema: rotary_embedding(Tensor q, Tensor cos, Tensor sin) -> Tensor
// The op of a kernel file written for version 1 of the rotary_embedding contract (a run folder of
// an older build): q alone, contiguous. Files of version 2 export ops/rotary_embedding.cpp.
// RoPE in the rotate-half convention: q * cat(cos, cos) + rotate_half(q) * cat(sin, sin), with
// q [batch, heads, seq, head_dim] and cos, sin [seq, head_dim / 2].
#include "common.h"
#include "rotary_tables.h"

namespace autokernel_ops {

at::Tensor rotary_embedding(const at::Tensor& q, const at::Tensor& cos, const at::Tensor& sin) {
  std::string why = uncovered(q, "q");
  if (why.empty() && q.dim() != 4) why = "q is not [batch, heads, seq, head_dim]";
  if (why.empty() && q.size(3) % 2) why = "head_dim is odd";
  if (why.empty()) why = unlike(cos, q, "cos");
  if (why.empty()) why = unlike(sin, q, "sin");
  if (why.empty() && (cos.numel() != q.size(2) * (q.size(3) / 2) || sin.numel() != cos.numel()))
    why = "cos and sin are not [seq, head_dim / 2]";
  if (!why.empty()) {
    log_fallback("rotary_embedding", why);
    const int64_t half = q.size(-1) / 2;
    at::Tensor c = at::cat({cos, cos}, -1).view({q.size(2), 2 * half}), s = at::cat({sin, sin}, -1).view({q.size(2), 2 * half});
    at::Tensor rotated = at::cat({-q.slice(-1, half), q.slice(-1, 0, half)}, -1);
    return q * c + rotated * s;
  }
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor out = empty(q.sizes(), q);
  const long long shape[] = {q.size(0), q.size(1), q.size(2), q.size(3)};
  void* buffers[] = {q.data_ptr(), cos.data_ptr(), sin.data_ptr(), out.data_ptr()};
  check_launch("rotary_embedding", launch_rotary_embedding(buffers, shape, nullptr, dtype_code(q), stream()));
  return out;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("rotary_embedding(Tensor q, Tensor cos, Tensor sin) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("rotary_embedding", &autokernel_ops::rotary_embedding); }
AK_LOAD_OP(rotary_embedding)
AK_DIRECT_CALL(rotary_embedding, &autokernel_ops::rotary_embedding)
