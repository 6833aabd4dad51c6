// schema: matmul(Tensor x, Tensor weight, Tensor? bias) -> Tensor
// torch.nn.functional.linear(x, weight, bias): y = x W^T (+ bias), version 2 of the matmul contract
// (x [..., K] of any leading dimensions, contiguous; W [N, K] as nn.Linear stores it; bias [N] or
// none). The kernel runs only at a shape one of the exported files was measured faster than cuBLAS
// at (the launcher's pick_matmul, file_pick.h's exact rule); any other call is PyTorch's.
#include "common.h"

namespace autokernel_ops {

namespace {
// One per 64 x 64 block of y and 32 for a tile scheduler (kernels_cuda/matmul/matmul_type.cpp):
// 2^20 covers y up to 65536 x 65536 less the scheduler's.
DeviceCounters matmul_counters(int64_t(1) << 20);

int64_t tile_counters(int64_t m, int64_t n) { return (m + 63) / 64 * ((n + 63) / 64) + 32; }
}  // namespace

at::Tensor matmul(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  std::string why = uncovered(x, "x");
  if (why.empty() && x.dim() == 0) why = "x has no dimensions";
  if (why.empty()) why = unlike(weight, x, "weight");
  if (why.empty() && (weight.dim() != 2 || weight.size(1) != x.size(-1) || weight.size(0) == 0)) why = "weight is not [out, in] with in = x's last dimension";
  const bool has_bias = bias.has_value() && bias->defined();
  if (why.empty() && has_bias) why = unlike(*bias, x, "bias");
  if (why.empty() && has_bias && (bias->dim() != 1 || bias->size(0) != weight.size(0))) why = "bias is not one value per output";
  const int64_t k = x.size(-1), n = weight.size(0), m = x.numel() / std::max<int64_t>(k, 1);
  if (why.empty() && (weight.numel() > INT32_MAX || m * n > INT32_MAX)) why = "weight or y has more than 2^31 elements";
  long long shape[] = {m, n, k, has_bias ? 1 : 0};
  if (why.empty() && pick_matmul(shape, dtype_code(x)) < 0)
    why = "no exported file was measured faster than cuBLAS at M " + std::to_string(m) + ", N " + std::to_string(n) + ", K " +
          std::to_string(k) + (has_bias ? " with bias" : "") + " in " + std::string(c10::toString(x.scalar_type()));
  at::Tensor counters;
  if (why.empty()) counters = matmul_counters.get(x.get_device(), tile_counters(m, n), why);
  if (!why.empty()) {
    log_fallback("matmul", why);
    return at::linear(x, weight, has_bias ? *bias : at::Tensor());
  }
  const c10::cuda::CUDAGuard guard(x.device());
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  sizes.back() = n;
  at::Tensor y = empty(sizes, x);
  at::Tensor workspace = float_scratch(m * n, x);  // split-K's and stream-K's partial sums: undefined at every launch
  // Without a bias the kernel is told so (has_bias 0) and never reads the pointer: y's stands in.
  void* buffers[] = {x.data_ptr(), weight.data_ptr(), has_bias ? bias->data_ptr() : y.data_ptr(), y.data_ptr(),
                     workspace.data_ptr(), counters.data_ptr()};
  check_launch("matmul", launch_matmul(buffers, shape, nullptr, dtype_code(x), stream()));
  return y;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("matmul(Tensor x, Tensor weight, Tensor? bias) -> Tensor"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("matmul", &autokernel_ops::matmul); }
// The counters are made at import with the module, never at a first call inside a capture.
AK_LOAD_OP_PREPARING(matmul, [](int device) {
  std::string why;
  autokernel_ops::matmul_counters.get(device, 0, why);
})
AK_DIRECT_CALL(matmul, &autokernel_ops::matmul)
