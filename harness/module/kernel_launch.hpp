#pragma once
/// A compiled kernel file (or reference) loaded on the GPU, ready to launch on any shape and dtype
/// of its spec. The launch geometry comes from the module's exported constants, never from text.
#include <map>
#include <tuple>
#include <vector>

#include "harness/compile/kernel_contract.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "harness/gpu/gpu_context.hpp"
#include "harness/module/grid_launch.hpp"
#include "harness/module/module_memory.hpp"
#include "harness/module/planned_launch.hpp"
#include "harness/module/run_buffers.hpp"
#include "harness/module/tensor_maps.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

class LaunchableKernel {
 public:
  /// Loads a candidate: entry<T> for each dtype and its geometry (ak_block_threads, ...), or, for
  /// a file with a launch plan (ak_launch), its steps, checked at every declared shape with the
  /// plan's scratch within `scratch_cap_bytes`.
  static Result<LaunchableKernel> candidate(GpuContext& gpu, const KernelSpec& spec, const CompileOutput& compiled,
                                            uint64_t scratch_cap_bytes = kDefaultScratchCapMib << 20);
  /// Loads the spec's reference (fp32 outputs, or the input dtype): spec.reference_blocks_per_row
  /// blocks of spec.reference_threads per row (per sampled row, under sampled validation).
  static Result<LaunchableKernel> reference(GpuContext& gpu, const KernelSpec& spec, const CompileOutput& compiled,
                                            ReferenceOutput out);

  /// What the driver says of the entry point for dtype d: registers, local (spill) and static
  /// shared memory bytes. The cubin's own account, where NVRTC's log has none.
  FunctionInfo attributes(DType d) const;
  /// How many blocks of the entry point for dtype d the driver fits on one SM at the launch's
  /// block size and dynamic shared memory (cuOccupancyMaxActiveBlocksPerMultiprocessor).
  Result<int> max_blocks_per_sm(DType d) const;
  /// The dynamic shared memory each block of a launch asks for (ak_smem_bytes).
  int dynamic_smem_bytes() const { return is_reference_ ? 0 : smem_bytes_; }

  /// Enqueues one launch (every step of a plan, in order), after writing the module's writable memory back to its image (a
  /// candidate's launch starts from what the file says, never from what a launch left there) and
  /// copying its range aside for check_module_memory.
  /// The CUresult is returned as is so the caller can tell sticky errors.
  /// With `restore_memory` false the caller has called restore_module_memory() itself (to keep
  /// the copies out of a timed interval).
  CUresult launch(const KernelSpec& spec, DType d, const Shape& shape, const RunBuffers& b, CUstream s = nullptr,
                  bool restore_memory = true) const;
  CUresult restore_module_memory(CUstream s = nullptr) const { return memory_.restore(s); }

  /// Enqueues, right before a launch at (shape, d), what the launch may find: a plan's scratch
  /// (allocated for the shape when it changed) poisoned, every SM's shared memory and the slack of
  /// every allocation of the context poisoned (DeviceChecks::poison_before_launch), and the copy
  /// of the module's memory the check compares with. An error of a plan at this shape is the
  /// candidate's (a shape no stage declared, where its plan fails); an allocation's the harness's.
  Status before_launch(const DeviceChecks& checks, const Shape& shape, DType d) const;
  /// Enqueues, after a launch, the check that the launch left the module's memory unchanged: the
  /// first changed byte's offset lands in `slot` (ModuleMemory::kNoChange when none).
  Status check_module_memory(const DeviceChecks& checks, CUdeviceptr slot) const {
    return memory_.check_into(checks, slot);
  }
  /// "" when nothing changed; else where the kernel wrote (ModuleMemory::describe_change).
  std::string module_memory_change(uint64_t slot_value) const { return memory_.describe_change(slot_value); }

  int block_threads() const { return geometry_.block_threads; }
  int rows_per_block() const { return geometry_.rows_per_block; }
  const LaunchGeometry& geometry() const { return geometry_; }
  const GridLaunch& grid_launch() const { return grid_launch_; }
  const std::vector<TensorMapDecl>& tensor_maps() const { return tensor_maps_; }
  const std::string& lowered_name(DType d) const { return names_.at(d); }
  /// The kernels one launch runs: a plan's steps, else 1.
  int steps() const { return plan_ ? int(plan_->steps()) : 1; }
  bool planned() const { return plan_ != nullptr; }
  /// "" when the file has no plan or its plan holds at (shape, d); else why not.
  std::string plan_problem(const Shape& shape, DType d) const {
    if (!plan_) return "";
    auto s = plan_->check_at(shape, d);
    return s ? "" : s.error().message;
  }

 private:
  const CudaDriver* d_ = nullptr;
  LoadedModule module_;
  std::map<DType, CUfunction> functions_;
  std::map<DType, std::string> names_;
  LaunchGeometry geometry_;
  int smem_bytes_ = 0;
  GridLaunch grid_launch_;                  ///< clusters and persistent grid (candidates only)
  /// The maps of one call, encoded once per dtype, shape and buffers (launch() is on the timed path).
  using MapsKey = std::tuple<DType, Shape, std::vector<CUdeviceptr>>;
  static constexpr size_t kMapsCacheEntries = 64;
  mutable std::map<MapsKey, TensorMapsParam> maps_cache_;
  const TensorMapsParam* encoded_maps(const KernelSpec& spec, DType d, const Shape& shape,
                                      const std::vector<CUdeviceptr>& operands) const;
  std::vector<TensorMapDecl> tensor_maps_;  ///< what ak_tensor_maps declares; empty: no maps parameter
  ModuleMemory memory_;   ///< a candidate's writable memory; empty for a reference
  std::shared_ptr<const AllocationSlack> slack_;  ///< the context's allocations (candidates only)
  bool is_reference_ = false;
  std::shared_ptr<const PlannedSteps> plan_;   ///< a file with ak_launch; null: one entry point
};

}  // namespace ak
