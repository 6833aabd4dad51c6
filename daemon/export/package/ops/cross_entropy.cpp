// schema: cross_entropy(Tensor logits, Tensor target) -> (Tensor, Tensor)
// F.cross_entropy(logits, target) with reduction 'none' and 'mean', logits [rows, classes], int64
// targets. What a target outside [0, classes) means depends on the version of the cross_entropy
// contract the exported file follows (AK_CONTRACT_VERSION_cross_entropy, launch.h):
//   version 2: the kernel handles them, and the op passes the targets through without looking:
//     -100 (PyTorch's default ignore_index) ignores its row (loss 0, the mean over the rows not
//     ignored; every row ignored: NaN, PyTorch's 0/0); any other target outside [0, classes)
//     gives that row a NaN loss and so a NaN mean, where PyTorch would stop with a device assert.
//     No reduction, no host synchronisation: the op can be captured in a CUDA graph.
//   version 1: such a target is outside the kernel's contract: the op checks for one (a small
//     reduction and a sync) and then runs PyTorch's op.
#include "common.h"

#include <map>

namespace autokernel_ops {

/// The kernel's counters on `device`: zeroed once when allocated, left zero by every launch (the
/// harness checks). Allocating inside a CUDA-graph capture would record the zeroing into the graph
/// instead of running it, so that is refused: call this for each device before capturing (at load,
/// from the op that prepares the library, or by one eager call of the op on that device).
at::Tensor counters(int device) {
  static std::mutex m;
  static std::map<int, at::Tensor> per_device;
  std::lock_guard<std::mutex> lock(m);
  at::Tensor& c = per_device[device];
  if (!c.defined()) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(device).stream(), &capturing);
    TORCH_CHECK(capturing == cudaStreamCaptureStatusNone, "autokernel_ops: cross_entropy: its counters on cuda:", device,
                " are not allocated yet and a CUDA graph is being captured: call the op once on this device before "
                "capturing (or autokernel_ops::counters(", device, ") at load)");
    c = at::zeros({1}, at::TensorOptions().device(at::kCUDA, device).dtype(at::kInt));
  }
  return c;
}

/// Why `target` cannot go with `logits`, or "".
std::string unfit_target(const at::Tensor& logits, const at::Tensor& target) {
  if (target.scalar_type() != at::kLong || target.dim() != 1 || target.size(0) != logits.size(0) ||
      !target.is_contiguous() || target.device() != logits.device())
    return "target is not one int64 class index per row";
#if AK_CONTRACT_VERSION_cross_entropy < 2
  if (at::logical_or(target.lt(0), target.ge(logits.size(1))).any().item<bool>())
    return "a target lies outside [0, classes) (an ignore_index?)";
#endif
  return "";
}

std::tuple<at::Tensor, at::Tensor> cross_entropy(const at::Tensor& logits, const at::Tensor& target) {
  std::string why = uncovered(logits, "logits");
  if (why.empty() && logits.dim() != 2) why = "logits are not [rows, classes]";
  if (why.empty()) why = unfit_target(logits, target);
  if (!why.empty()) {
    log_fallback("cross_entropy", why);
    // PyTorch's own 'mean': over the rows whose target is not ignored.
    return {at::cross_entropy_loss(logits, target, {}, at::Reduction::None),
            at::cross_entropy_loss(logits, target, {}, at::Reduction::Mean)};
  }
  const c10::cuda::CUDAGuard guard(logits.device());
  at::Tensor loss = empty({logits.size(0)}, logits), mean = empty({}, logits);
  const long long shape[] = {logits.size(0), logits.size(1)};
  at::Tensor tickets = counters(logits.get_device());
  void* buffers[] = {logits.data_ptr(), target.data_ptr(), loss.data_ptr(), mean.data_ptr(), tickets.data_ptr()};
  check_launch("cross_entropy", launch_cross_entropy(buffers, shape, nullptr, dtype_code(logits), stream()));
  return {loss, mean};
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) { m.def("cross_entropy(Tensor logits, Tensor target) -> (Tensor, Tensor)"); }
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("cross_entropy", &autokernel_ops::cross_entropy); }
// The counters are made at import with the module, never at a first call inside a capture.
AK_LOAD_OP_PREPARING(cross_entropy, [](int device) { autokernel_ops::counters(device); })
AK_DIRECT_CALL(cross_entropy, &autokernel_ops::cross_entropy)
