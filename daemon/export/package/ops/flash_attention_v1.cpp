// schema: flash_attention(Tensor q, Tensor k, Tensor v) -> Tensor
// The op of a kernel file written for version 1 of the flash_attention contract (a run folder of an
// older build); files of version 2 export ops/flash_attention.cpp.
// F.scaled_dot_product_attention(q, k, v, is_causal=True) with its default scale 1/sqrt(D), version
// 1 of the flash_attention contract: q, k, v and o [B, H, S, D], one head count, contiguous. The
// kernel runs only at a shape one of the exported files was measured faster than SDPA at
// (pick_flash_attention, file_pick.h's exact rule); any other call is PyTorch's SDPA.
#include "common.h"

namespace autokernel_ops {

at::Tensor flash_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  std::string why = uncovered(q, "q");
  if (why.empty() && q.dim() != 4) why = "q is not [B, H, S, D]";
  if (why.empty()) why = unlike(k, q, "k");
  if (why.empty()) why = unlike(v, q, "v");
  // Version 1 takes one head count and one length for q, k and v: grouped-query heads and a
  // query shorter than the keys (a decode step) are PyTorch's.
  if (why.empty() && (k.sizes() != q.sizes() || v.sizes() != q.sizes())) why = "k or v has another shape than q";
  long long shape[] = {q.dim() == 4 ? q.size(0) : 0, q.dim() == 4 ? q.size(1) : 0, q.dim() == 4 ? q.size(2) : 0,
                       q.dim() == 4 ? q.size(3) : 0};
  if (why.empty() && pick_flash_attention(shape, dtype_code(q)) < 0)
    why = "no exported file was measured faster at B " + std::to_string(shape[0]) + ", H " + std::to_string(shape[1]) +
          ", S " + std::to_string(shape[2]) + ", D " + std::to_string(shape[3]) + " in " + std::string(c10::toString(q.scalar_type()));
  if (!why.empty()) {
    log_fallback("flash_attention", why);
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  }
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = empty(q.sizes(), q);
  void* buffers[] = {q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr()};
  check_launch("flash_attention", launch_flash_attention(buffers, shape, nullptr, dtype_code(q), stream()));
  return o;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("flash_attention(Tensor q, Tensor k, Tensor v) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("flash_attention", &autokernel_ops::flash_attention); }
AK_LOAD_OP(flash_attention)
AK_DIRECT_CALL(flash_attention, &autokernel_ops::flash_attention)
