#pragma once
/// Inputs drawn on the GPU itself, for the timed launches: a fresh set before every launch
/// costs microseconds there (the host would take a second per set at 8192 x 8192), so no two
/// consecutive launches see the same contents and no memo of an earlier launch can ever hit.
/// A set is a pure function of its seed, so the set a checked launch saw can be drawn again
/// afterwards for the reference. Values follow the same distributions as the host's Normal
/// recipe (inputs.hpp): Irwin-Hall normals, uniform weights and biases, class indices and targets.
#include <map>
#include <memory>

#include "harness/gpu/gpu_context.hpp"
#include "harness/module/run_buffers.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

class DeviceInputs {
 public:
  /// Compiles and loads the fill kernels (once per worker).
  static Result<std::unique_ptr<DeviceInputs>> open(GpuContext& gpu);

  /// Enqueues, on the default stream, the filling of every input of `set` for `seed`.
  Status fill(const KernelSpec& spec, const Shape& shape, DType d, const RunSet& set, uint64_t seed) const;

 private:
  DeviceInputs(GpuContext& gpu) : gpu_(gpu) {}
  Status launch(CUfunction f, CUdeviceptr out, int64_t n, uint64_t seed, int kind, float scale_or_classes) const;
  GpuContext& gpu_;
  LoadedModule module_;
  std::map<DType, CUfunction> fill_;
  CUfunction fill_index_ = nullptr;
};

}  // namespace ak
