// schema: softmax(Tensor x) -> Tensor
// torch.softmax(x, dim=-1), in x's dtype.
#include "common.h"

namespace autokernel_ops {

at::Tensor softmax(const at::Tensor& x) {
  if (std::string why = uncovered(x, "x"); !why.empty()) {
    log_fallback("softmax", why);
    return at::softmax(x, -1);
  }
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = empty(x.sizes(), x);
  const long long shape[] = {x.numel() / x.size(-1), x.size(-1)};
  void* buffers[] = {x.data_ptr(), y.data_ptr()};
  check_launch("softmax", launch_softmax(buffers, shape, nullptr, dtype_code(x), stream()));
  return y;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("softmax(Tensor x) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("softmax", &autokernel_ops::softmax); }
AK_LOAD_OP(softmax)
AK_DIRECT_CALL(softmax, &autokernel_ops::softmax)
