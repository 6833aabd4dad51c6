// What every exported op shares: the contract check, the fallback to PyTorch (logged once per op
// and reason), the stream, and the dtype code the launchers take. Written by autokernel export.
#pragma once
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "launch.h"

// The op namespace: torch.ops.autokernel, or in the hf-kernels layout the builder's extension name
// (ops_namespace.h, written there). The _EXPAND macros let the namespace be a macro itself.
#if __has_include("ops_namespace.h")
#include "ops_namespace.h"
#if defined(AK_HF_DIRECT_CALLS)
// build_variant.py --direct-calls (hf-kernels layout): each op is also the one function of a Python
// module of its own inside the library, PyInit_<namespace>_<type>, for the layers' eager calls
// (the dispatcher's boxing costs microseconds a call). Off by default: those modules need CPython
// symbols outside the stable ABI (abi3), which the kernels library's builds keep to; kernel-builder
// never defines it, and the registered op serves every call there.
#include "direct_call.h"
#define AK_DIRECT_CALL(type, fn) \
  AK_DIRECT_MODULE_NAMED(type, fn, AK_DIRECT_CONCAT(AK_DIRECT_CONCAT(AK_OPS_NAMESPACE, _), type))
#else
#define AK_DIRECT_CALL(type, fn)
#endif
#else
#define AK_OPS_NAMESPACE autokernel
// The eager path's call: the op's function as a plain function of the extension's Python module,
// which skips the dispatcher's boxing and unboxing of every argument, microseconds a call;
// torch.compile and CUDA-graph capture see the same C++ through the registered op. (The
// hf-kernels layout has a Python module of kernel-builder's: there the registered op serves both.)
#include "direct_call.h"
#define AK_DIRECT_CALL(type, fn) AK_DIRECT_MODULE(type, fn)
#endif
#define AK_LIBRARY_FRAGMENT_EXPAND(ns, m) TORCH_LIBRARY_FRAGMENT(ns, m)
#define AK_LIBRARY_IMPL_EXPAND(ns, m) TORCH_LIBRARY_IMPL(ns, CUDA, m)

namespace autokernel_ops {

/// 0 fp16, 1 bf16, 2 fp32 (the launchers' order); -1 for any other dtype.
inline int dtype_code(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kHalf: return 0;
    case at::kBFloat16: return 1;
    case at::kFloat: return 2;
    default: return -1;
  }
}

/// Why the kernel's contract does not cover `t` as its main operand, or "" when it does: a CUDA
/// tensor of fp16, bf16 or fp32, contiguous, non-empty, with dimensions that fit the kernel's ints.
inline std::string uncovered(const at::Tensor& t, const char* name) {
  if (!t.is_cuda()) return std::string(name) + " is not on a CUDA device";
  if (dtype_code(t) < 0) return std::string(name) + " is " + std::string(c10::toString(t.scalar_type())) + ", not fp16, bf16 or fp32";
  if (!t.is_contiguous()) return std::string(name) + " is not contiguous";
  if (t.numel() == 0) return std::string(name) + " is empty";
  if (t.numel() > INT32_MAX) return std::string(name) + " has more than 2^31 elements";
  return "";
}

/// Why `t` cannot go with `x` (same device and dtype, contiguous), or "".
inline std::string unlike(const at::Tensor& t, const at::Tensor& x, const char* name) {
  if (t.device() != x.device()) return std::string(name) + " is on another device";
  if (t.scalar_type() != x.scalar_type()) return std::string(name) + " has another dtype than the input";
  if (!t.is_contiguous()) return std::string(name) + " is not contiguous";
  return "";
}

/// An uninitialised tensor of `sizes` with `like`'s dtype, on `like`'s CUDA device, from the
/// caching allocator without the dispatcher: at::empty's boxing and key lookup cost a microsecond
/// or two of CPU a call, of an op whose whole budget is ten. The tensor is the one at::empty makes
/// (TensorImpl takes inference mode from the thread, as there).
inline at::Tensor empty(at::IntArrayRef sizes, const at::Tensor& like) {
  return at::Tensor(at::detail::empty_cuda(sizes, like.scalar_type(), like.device(), std::nullopt));
}

/// Element strides dense in x's order of dimensions (largest stride outermost), as PyTorch's
/// elementwise operators and SDPA's flash path give their results: for the usual transposed view,
/// x's own strides, with no copy anywhere. A dimension of size 1 has no order of its own (PyTorch
/// leaves it where it is), so only the others are sorted, into the places they held. x is
/// [batch, heads, seq, head_dim]: the ops that call it admit no other.
inline std::array<int64_t, 4> dense_strides(const at::Tensor& x) {
  constexpr int64_t kDims = 4;
  std::array<int64_t, kDims> order{}, places{}, moving{}, strides{};
  int64_t n = 0;
  for (int64_t d = 0; d < kDims; ++d) {
    order[size_t(d)] = d;
    if (x.size(d) != 1) places[size_t(n)] = moving[size_t(n)] = d, ++n;
  }
  std::stable_sort(moving.begin(), moving.begin() + n, [&](int64_t a, int64_t b) { return x.stride(a) > x.stride(b); });
  for (int64_t i = 0; i < n; ++i) order[size_t(places[size_t(i)])] = moving[size_t(i)];
  // order[0] is outermost: strides grow from the innermost.
  int64_t step = 1;
  for (int64_t i = kDims; i-- > 0;) strides[size_t(order[size_t(i)])] = step, step *= x.size(order[size_t(i)]);
  return strides;
}

/// Says once per op and reason that PyTorch's op runs instead: a slower result, never a wrong one.
inline void log_fallback(const char* op, const std::string& why) {
  static std::mutex m;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(m);
  if (said.insert(std::string(op) + why).second)
    std::fprintf(stderr, "autokernel_ops: %s runs PyTorch's op instead: %s (said once)\n", op, why.c_str());
}

/// PyTorch's current stream, with the device's context bound to this thread: the launchers load and
/// launch through the CUDA driver in the current context, and the runtime binds its context to a
/// thread only when a runtime call needs it (a thread whose tensors came from the caching
/// allocator may have made none). A no-op runtime call binds it, as PyTorch does before its own
/// driver launches; once per thread and device (a set of devices, not the last one: a thread that
/// goes back and forth between two GPUs must not make that call again, perhaps inside a capture).
inline cudaStream_t stream() {
  thread_local unsigned long long bound = 0;
  const int device = c10::cuda::current_device();
  const unsigned long long bit = device < 64 ? 1ull << device : 0;
  if (!(bound & bit)) {
    cudaFree(nullptr);
    bound |= bit;
  }
  return at::cuda::getCurrentCUDAStream().stream();
}

/// A launcher's error (a CUDA error after the launch) as a Python exception naming the op.
inline void check_launch(const char* op, const char* error) {
  TORCH_CHECK(error == nullptr, "autokernel_ops: ", op, ": ", error ? error : "");
}

/// Loads an op's module in `device`'s context now. Python calls it for every loaded op at import
/// (torch.ops.autokernel.<type>_load(device)): a module loaded at the first launch instead could be
/// loaded inside a CUDA graph capture, where cuModuleLoadData has no place.
/// `prepare`, when given, makes the op's other per-device state there too (cross_entropy's counters).
inline void load_module(const char* op, const char* (*load)(), int64_t device, void (*prepare)(int) = nullptr) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  stream();
  check_launch(op, load());
  if (prepare) prepare(static_cast<int>(device));
}

/// A tensor-core kernel's counters on one device: unsigned ints, zero before every launch and left
/// zero by the kernel (the harness checks after every run), so allocated and zeroed once, at load,
/// outside any CUDA-graph capture (allocating inside one would record the zeroing into the graph
/// instead of running it). `capacity` of them; a call that needs more runs PyTorch's op. One set per
/// device: two launches of one type must not run at once on two streams of a device.
class DeviceCounters {
 public:
  explicit DeviceCounters(int64_t capacity) : capacity_(capacity) {}
  /// The device's counters, or an undefined tensor (and `why`) when `count` exceed the capacity or
  /// they are not allocated yet while a graph is being captured.
  at::Tensor get(int device, int64_t count, std::string& why) {
    if (count > capacity_) {
      why = "the call needs " + std::to_string(count) + " counters, more than the " + std::to_string(capacity_) + " allocated";
      return at::Tensor();
    }
    std::lock_guard<std::mutex> lock(m_);
    at::Tensor& c = per_device_[device];
    if (!c.defined()) {
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(device).stream(), &capturing);
      if (capturing != cudaStreamCaptureStatusNone) {
        why = "its counters are not allocated on this device and a CUDA graph is being captured: call autokernel_ops.load_on(device) first";
        return at::Tensor();
      }
      c = at::zeros({capacity_}, at::TensorOptions().device(at::kCUDA, device).dtype(at::kInt));
    }
    return c;
  }

 private:
  int64_t capacity_;
  std::mutex m_;
  std::map<int, at::Tensor> per_device_;
};

/// An uninitialised fp32 scratch of `count` values on `like`'s device, from the caching allocator
/// (under a CUDA-graph capture, the graph's pool).
inline at::Tensor float_scratch(int64_t count, const at::Tensor& like) {
  return at::Tensor(at::detail::empty_cuda({count}, at::kFloat, like.device(), std::nullopt));
}

/// Launches of each of a type's files so far, in the launcher's order (manifest.json's "files").
template <long long (*launches)(int), int (*files)()>
std::vector<int64_t> launch_counts() {
  std::vector<int64_t> out;
  for (int f = 0; f < files(); ++f) out.push_back(launches(f));
  return out;
}

/// Which of a type's files a launch of `shape` (the launcher's dimensions, in the spec's order) in
/// `dtype` (0 fp16, 1 bf16, 2 fp32) takes: the rule of file_pick.h.
template <int (*pick)(const long long*, int)>
int64_t pick_for(c10::ArrayRef<int64_t> shape, int64_t dtype) {
  std::vector<long long> s(shape.begin(), shape.end());
  s.resize(64, 0);  // the launcher reads the dimensions it has; the rest of `s` (strides) the rule never reads
  return pick(s.data(), static_cast<int>(dtype));
}

}  // namespace autokernel_ops

/// Registers <type>_load(int device) -> (), which loads the type's modules on that device (and
/// runs `prepare(device)`, a void(int) or nullptr, for the op's other per-device state);
/// <type>_launches() -> int[], the launches of each of its files so far (which file served which
/// calls: autokernel verify reads it around each call); and <type>_pick(int[] shape, int dtype) -> int,
/// the file a launch of that shape takes.
#define AK_LOAD_OP_PREPARING(type, prepare)                                                         \
  AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) {                                                 \
    m.def(#type "_load(int device) -> ()",                                                          \
          [](int64_t device) { autokernel_ops::load_module(#type, &load_##type, device, prepare); }); \
    m.def(#type "_launches() -> int[]", &autokernel_ops::launch_counts<&launches_##type, &files_##type>); \
    m.def(#type "_pick(int[] shape, int dtype) -> int", &autokernel_ops::pick_for<&pick_##type>);   \
  }
#define AK_LOAD_OP(type) AK_LOAD_OP_PREPARING(type, nullptr)
