// schema: fused_mlp(Tensor x, Tensor w_gate, Tensor w_up, Tensor w_down) -> Tensor
// A gated MLP in one launch, version 1 of the fused_mlp contract: (silu(x w_gate) * (x w_up)) w_down
// with x [..., K] contiguous, w_gate and w_up [K, I], w_down [I, K] (the transposes of transformers'
// gate_proj, up_proj and down_proj weights: the MLP replacement keeps them, _replacements.py). The
// kernel runs only at a shape one of the exported files was measured faster at than what it
// replaces (pick_fused_mlp, file_pick.h's exact rule); any other call is PyTorch's three GEMMs.
#include "common.h"

namespace autokernel_ops {

namespace {
// 2 M of them (kernels_cuda/fused_mlp/README.md): 2^20 covers M up to 524288 rows.
DeviceCounters fused_mlp_counters(int64_t(1) << 20);
}  // namespace

at::Tensor fused_mlp(const at::Tensor& x, const at::Tensor& w_gate, const at::Tensor& w_up, const at::Tensor& w_down) {
  std::string why = uncovered(x, "x");
  if (why.empty() && x.dim() == 0) why = "x has no dimensions";
  for (auto [w, name] : {std::pair{&w_gate, "w_gate"}, {&w_up, "w_up"}, {&w_down, "w_down"}})
    if (why.empty()) why = unlike(*w, x, name);
  const int64_t k = x.dim() ? x.size(-1) : 0, i = w_gate.dim() == 2 ? w_gate.size(1) : 0;
  if (why.empty() && (w_gate.dim() != 2 || w_gate.size(0) != k || w_up.sizes() != w_gate.sizes() || w_down.dim() != 2 ||
                      w_down.size(0) != i || w_down.size(1) != k || i == 0))
    why = "the weights are not w_gate, w_up [K, I] and w_down [I, K] for x's K";
  const int64_t m = k ? x.numel() / k : 0;
  if (why.empty() && (m * i > INT32_MAX || k * i > INT32_MAX)) why = "the hidden activations have more than 2^31 elements";
  long long shape[] = {m, k, i};
  if (why.empty() && pick_fused_mlp(shape, dtype_code(x)) < 0)
    why = "no exported file was measured faster at M " + std::to_string(m) + ", K " + std::to_string(k) + ", I " +
          std::to_string(i) + " in " + std::string(c10::toString(x.scalar_type()));
  at::Tensor counters;
  if (why.empty()) counters = fused_mlp_counters.get(x.get_device(), 2 * m, why);
  if (!why.empty()) {
    log_fallback("fused_mlp", why);
    return at::matmul(at::silu(at::matmul(x, w_gate)) * at::matmul(x, w_up), w_down);
  }
  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor out = empty(x.sizes(), x);
  at::Tensor hidden = float_scratch(m * i, x);  // the kernel's to use as it likes, undefined at every launch
  void* buffers[] = {x.data_ptr(), w_gate.data_ptr(), w_up.data_ptr(), w_down.data_ptr(), out.data_ptr(), hidden.data_ptr(),
                     counters.data_ptr()};
  check_launch("fused_mlp", launch_fused_mlp(buffers, shape, nullptr, dtype_code(x), stream()));
  return out;
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) {
  m.def("fused_mlp(Tensor x, Tensor w_gate, Tensor w_up, Tensor w_down) -> Tensor");
}
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("fused_mlp", &autokernel_ops::fused_mlp); }
AK_LOAD_OP_PREPARING(fused_mlp, [](int device) {
  std::string why;
  autokernel_ops::fused_mlp_counters.get(device, 0, why);
})
AK_DIRECT_CALL(fused_mlp, &autokernel_ops::fused_mlp)
