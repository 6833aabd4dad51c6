// schema: cross_entropy(Tensor logits, Tensor target) -> (Tensor, Tensor)
// F.cross_entropy(logits, target) with reduction 'none' and 'mean', logits [rows, classes], int64
// targets. A target outside [0, classes) (an ignore_index, say) is outside the kernel's contract:
// the op checks for one (a small reduction and a sync) and then runs PyTorch's op.
#include "common.h"

#include <map>

namespace autokernel_ops {

/// The kernel's counters: zeroed once per device, left zero by every launch (the harness checks).
at::Tensor& counters(const at::Tensor& like) {
  static std::mutex m;
  static std::map<int, at::Tensor> per_device;
  std::lock_guard<std::mutex> lock(m);
  at::Tensor& c = per_device[like.get_device()];
  if (!c.defined()) c = at::zeros({1}, like.options().dtype(at::kInt));
  return c;
}

std::tuple<at::Tensor, at::Tensor> cross_entropy(const at::Tensor& logits, const at::Tensor& target) {
  std::string why = uncovered(logits, "logits");
  if (why.empty() && logits.dim() != 2) why = "logits are not [rows, classes]";
  if (why.empty() && (target.scalar_type() != at::kLong || target.dim() != 1 || target.size(0) != logits.size(0) ||
                      !target.is_contiguous() || target.device() != logits.device()))
    why = "target is not one int64 class index per row";
  if (why.empty() && at::logical_or(target.lt(0), target.ge(logits.size(1))).any().item<bool>())
    why = "a target lies outside [0, classes) (an ignore_index?)";
  if (!why.empty()) {
    log_fallback("cross_entropy", why);
    // PyTorch's own 'mean': over the rows whose target is not ignored.
    return {at::cross_entropy_loss(logits, target, {}, at::Reduction::None),
            at::cross_entropy_loss(logits, target, {}, at::Reduction::Mean)};
  }
  const c10::cuda::CUDAGuard guard(logits.device());
  at::Tensor loss = at::empty({logits.size(0)}, logits.options()), mean = at::empty({}, logits.options());
  const long long shape[] = {logits.size(0), logits.size(1)};
  void* buffers[] = {logits.data_ptr(), target.data_ptr(), loss.data_ptr(), mean.data_ptr(), counters(logits).data_ptr()};
  check_launch("cross_entropy", launch_cross_entropy(buffers, shape, nullptr, dtype_code(logits), stream()));
  return {loss, mean};
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("cross_entropy(Tensor logits, Tensor target) -> (Tensor, Tensor)"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("cross_entropy", &autokernel_ops::cross_entropy); }
AK_LOAD_OP(cross_entropy)
