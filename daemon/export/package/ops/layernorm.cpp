// schema: layernorm(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor
// torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps).
#include "common.h"

namespace autokernel_ops {

at::Tensor layernorm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  std::string why = uncovered(x, "x");
  if (why.empty()) why = unlike(weight, x, "weight");
  if (why.empty()) why = unlike(bias, x, "bias");
  if (why.empty() && (weight.dim() != 1 || weight.size(0) != x.size(-1) || bias.dim() != 1 || bias.size(0) != x.size(-1)))
    why = "weight or bias is not one value per column";
  if (!why.empty()) {
    log_fallback("layernorm", why);
    return at::layer_norm(x, {x.size(-1)}, weight, bias, eps);
  }
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = empty(x.sizes(), x);
  const long long shape[] = {x.numel() / x.size(-1), x.size(-1)};
  void* buffers[] = {x.data_ptr(), weight.data_ptr(), bias.data_ptr(), y.data_ptr()};
  const float consts[] = {float(eps)};
  check_launch("layernorm", launch_layernorm(buffers, shape, consts, dtype_code(x), stream()));
  return y;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("layernorm(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("layernorm", &autokernel_ops::layernorm); }
AK_LOAD_OP(layernorm)
AK_DIRECT_CALL(layernorm, &autokernel_ops::layernorm)
