// schema: rmsnorm(Tensor x, Tensor weight, float eps) -> Tensor
// torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps): y = x * rsqrt(mean(x^2) + eps) * weight.
#include "common.h"

namespace autokernel_ops {

at::Tensor rmsnorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  std::string why = uncovered(x, "x");
  if (why.empty()) why = unlike(weight, x, "weight");
  if (why.empty() && (weight.dim() != 1 || weight.size(0) != x.size(-1))) why = "weight is not one value per column";
  if (!why.empty()) {
    log_fallback("rmsnorm", why);
    return at::rms_norm(x, {x.size(-1)}, weight, eps);
  }
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = empty(x.sizes(), x);
  const long long shape[] = {x.numel() / x.size(-1), x.size(-1)};
  void* buffers[] = {x.data_ptr(), weight.data_ptr(), y.data_ptr()};
  const float consts[] = {float(eps)};
  check_launch("rmsnorm", launch_rmsnorm(buffers, shape, consts, dtype_code(x), stream()));
  return y;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("rmsnorm(Tensor x, Tensor weight, float eps) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("rmsnorm", &autokernel_ops::rmsnorm); }
AK_LOAD_OP(rmsnorm)
AK_DIRECT_CALL(rmsnorm, &autokernel_ops::rmsnorm)
