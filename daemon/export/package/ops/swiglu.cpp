// schema: swiglu(Tensor gate, Tensor up) -> Tensor
// torch.nn.functional.silu(gate) * up: the gate product of a gated MLP (transformers' LlamaMLP and its
// kin), silu in fp32 and the product rounded once to the inputs' dtype. What the operands may be
// depends on the version of the swiglu contract the exported file follows (AK_CONTRACT_VERSION_swiglu,
// launch.h):
//   version 2: gate and up each rows of `cols` elements a common row stride apart, last stride 1:
//     dense tensors (the stride is cols), or the halves of one fused projection as chunk(2, dim=-1)
//     gives them (Phi3MLP: row stride 2 * cols, up starting cols elements after gate), read where
//     they lie, no copy. Both start 16-byte aligned, as the kernel's vector loads take them.
//   version 1: gate and up dense.
// The result is dense, of gate's shape.
#include "common.h"

#include <cstdint>

namespace autokernel_ops {

#if AK_CONTRACT_VERSION_swiglu >= 2
/// The row stride of `t` seen as [rows, cols], cols its last dimension: rows evenly spaced, each
/// dense; -1 when its strides do not make such rows.
long long row_stride(const at::Tensor& t) {
  const int64_t last = t.dim() - 1;
  if (t.size(last) > 1 && t.stride(last) != 1) return -1;
  long long ld = -1, next = -1;  // next: the stride the next outer dimension must have
  for (int64_t i = last - 1; i >= 0; --i) {
    if (t.size(i) == 1) continue;  // any stride: it is never stepped
    if (ld < 0) ld = next = t.stride(i);
    else if (t.stride(i) != next) return -1;
    next *= t.size(i);
  }
  return ld < 0 ? t.size(last) : ld;
}

/// Why gate and up cannot be read as rows `ld` apart, or "" (and `ld` set).
std::string unfit_rows(const at::Tensor& gate, const at::Tensor& up, long long& ld) {
  if (!gate.is_cuda()) return "gate is not on a CUDA device";
  if (dtype_code(gate) < 0) return "gate is " + std::string(c10::toString(gate.scalar_type())) + ", not fp16, bf16 or fp32";
  if (gate.dim() == 0) return "gate has no dimensions";  // no last one to make the columns
  if (gate.numel() == 0) return "gate is empty";
  if (up.device() != gate.device()) return "up is on another device";
  if (up.scalar_type() != gate.scalar_type()) return "up has another dtype than the input";
  // The kernel reads both operands element for element: a broadcast up is PyTorch's to expand.
  if (up.sizes() != gate.sizes()) return "up has another shape than gate";
  ld = row_stride(gate);
  if (ld < 0) return "gate's rows are not evenly spaced with a last stride of 1";
  if (row_stride(up) != ld) return "up's rows are not gate's stride apart, each dense";
  const long long cols = gate.size(-1), rows = gate.numel() / cols;
  if (ld < cols) return "gate's rows overlap (row stride below the row length)";
  if (rows * ld > INT32_MAX) return "gate spans more than 2^31 elements";
  if (reinterpret_cast<uintptr_t>(gate.data_ptr()) % 16 || reinterpret_cast<uintptr_t>(up.data_ptr()) % 16)
    return "gate or up does not start 16-byte aligned";
  return "";
}
#else
/// Why gate and up are not two dense operands of one shape, or "".
std::string unfit_rows(const at::Tensor& gate, const at::Tensor& up, long long& ld) {
  std::string why = uncovered(gate, "gate");
  if (why.empty() && gate.dim() == 0) why = "gate has no dimensions";  // no last one to make the columns
  if (why.empty()) why = unlike(up, gate, "up");
  if (why.empty() && up.sizes() != gate.sizes()) why = "up has another shape than gate";
  if (why.empty()) ld = gate.size(-1);
  return why;
}
#endif

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  long long ld = 0;
  const std::string why = unfit_rows(gate, up, ld);
  if (!why.empty()) {
    log_fallback("swiglu", why);
    return at::mul(at::silu(gate), up);
  }
  const c10::cuda::CUDAGuard guard(gate.device());
  at::Tensor y = empty(gate.sizes(), gate);
  const long long shape[] = {gate.numel() / gate.size(-1), gate.size(-1), ld};  // version 1 reads the first two
  void* buffers[] = {gate.data_ptr(), up.data_ptr(), y.data_ptr()};
  check_launch("swiglu", launch_swiglu(buffers, shape, nullptr, dtype_code(gate), stream()));
  return y;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("swiglu(Tensor gate, Tensor up) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("swiglu", &autokernel_ops::swiglu); }
AK_LOAD_OP(swiglu)
AK_DIRECT_CALL(swiglu, &autokernel_ops::swiglu)
