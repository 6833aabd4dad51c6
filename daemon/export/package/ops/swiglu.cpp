// schema: swiglu(Tensor gate, Tensor up) -> Tensor
// torch.nn.functional.silu(gate) * up: the gate product of a gated MLP (transformers' LlamaMLP and its
// kin), silu in fp32 and the product rounded once to the inputs' dtype.
#include "common.h"

namespace autokernel_ops {

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  std::string why = uncovered(gate, "gate");
  if (why.empty() && gate.dim() == 0) why = "gate has no dimensions";  // no last one to make the columns
  if (why.empty()) why = unlike(up, gate, "up");
  // The kernel reads both operands element for element: a broadcast up is PyTorch's to expand.
  if (why.empty() && up.sizes() != gate.sizes()) why = "up has another shape than gate";
  if (!why.empty()) {
    log_fallback("swiglu", why);
    return at::mul(at::silu(gate), up);
  }
  const c10::cuda::CUDAGuard guard(gate.device());
  at::Tensor y = empty(gate.sizes(), gate);
  const long long shape[] = {gate.numel() / gate.size(-1), gate.size(-1)};
  void* buffers[] = {gate.data_ptr(), up.data_ptr(), y.data_ptr()};
  check_launch("swiglu", launch_swiglu(buffers, shape, nullptr, dtype_code(gate), stream()));
  return y;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("swiglu(Tensor gate, Tensor up) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("swiglu", &autokernel_ops::swiglu); }
AK_LOAD_OP(swiglu)
AK_DIRECT_CALL(swiglu, &autokernel_ops::swiglu)
