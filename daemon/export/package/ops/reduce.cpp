// schema: reduce(Tensor x) -> Tensor
// torch.sum(x, dim=-1) in x's dtype, accumulated in fp32 or better, bitwise repeatable.
#include "common.h"

namespace autokernel_ops {

at::Tensor reduce(const at::Tensor& x) {
  if (std::string why = uncovered(x, "x"); !why.empty()) {
    log_fallback("reduce", why);
    return at::sum(x, -1);
  }
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = empty(x.sizes().slice(0, x.dim() - 1), x);
  const long long shape[] = {x.numel() / x.size(-1), x.size(-1)};
  void* buffers[] = {x.data_ptr(), y.data_ptr()};
  check_launch("reduce", launch_reduce(buffers, shape, nullptr, dtype_code(x), stream()));
  return y;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("reduce(Tensor x) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("reduce", &autokernel_ops::reduce); }
AK_LOAD_OP(reduce)
AK_DIRECT_CALL(reduce, &autokernel_ops::reduce)
