#pragma once
/// A compiled kernel file (or reference) loaded on the GPU, ready to launch on any shape and dtype
/// of its spec. The launch geometry comes from the module's exported constants, never from text.
#include <map>
#include <vector>

#include "harness/gpu_context.hpp"
#include "harness/kernel_contract.hpp"
#include "harness/nvrtc_compile.hpp"
#include "harness/run_buffers.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

class LaunchableKernel {
 public:
  /// Loads a candidate: entry<T> for each dtype and its geometry (ak_block_threads, ...).
  static Result<LaunchableKernel> candidate(GpuContext& gpu, const KernelSpec& spec, const CompileOutput& compiled);
  /// Loads the spec's reference (fp32 outputs, or the input dtype): spec.reference_blocks_per_row
  /// blocks of spec.reference_threads per row (per sampled row, under sampled validation).
  static Result<LaunchableKernel> reference(GpuContext& gpu, const KernelSpec& spec, const CompileOutput& compiled,
                                            ReferenceOutput out);

  /// What the driver says of the entry point for dtype d: registers, local (spill) and static
  /// shared memory bytes. The cubin's own account, where NVRTC's log has none.
  FunctionInfo attributes(DType d) const;

  /// Enqueues one launch, after writing the module's initialised memory back to its image (a
  /// candidate's launch starts from what the file says, never from what a launch left there).
  /// The CUresult is returned as is so the caller can tell sticky errors.
  CUresult launch(const KernelSpec& spec, DType d, const Shape& shape, const RunBuffers& b, CUstream s = nullptr) const;

  int block_threads() const { return geometry_.block_threads; }
  int rows_per_block() const { return geometry_.rows_per_block; }
  const LaunchGeometry& geometry() const { return geometry_; }
  const std::string& lowered_name(DType d) const { return names_.at(d); }

 private:
  Status hold_initialized_memory(const std::vector<char>& cubin);
  const CudaDriver* d_ = nullptr;
  LoadedModule module_;
  std::map<DType, CUfunction> functions_;
  std::map<DType, std::string> names_;
  LaunchGeometry geometry_;
  int smem_bytes_ = 0;
  /// The module's initialised variables and where they live, written back before each launch.
  struct Restore {
    CUdeviceptr at;
    std::vector<char> image;
  };
  std::vector<Restore> restores_;
  bool is_reference_ = false;
};

}  // namespace ak
