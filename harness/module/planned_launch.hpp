#pragma once
/// A loaded kernel file's launch plan (kernels_cuda/launch_plan.hpp, docs/user-types.md "Launch
/// plans"): the plan read from the module itself, its steps' functions per dtype with their
/// parameters checked, the plan checked at load against the GPU's limits at every shape the spec
/// declares; per shape, the scratch buffers (whole pages, their slack listed as every harness
/// buffer's is) and the steps' geometry; one launch enqueues every step in order on one stream.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/compile/nvrtc_compile.hpp"
#include "harness/gpu/gpu_context.hpp"
#include "harness/module/run_buffers.hpp"
#include "kernels_cuda/launch_plan.hpp"
#include "kernels_cuda/spec.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {

/// The scratch of all a plan's buffers together, by default ([harness] scratch_cap_mib).
inline constexpr uint64_t kDefaultScratchCapMib = 16384;

/// The steps a compile's name expressions name, in order ("conv<float>", "conv<__half>" -> conv).
std::vector<std::string> compiled_step_names(const CompileOutput& compiled);

class PlannedSteps {
 public:
  /// The plan of a loaded module: nullopt when the module declares no ak_launch and was compiled
  /// as a plain file. An error names what is wrong: a plan for a built-in type, a module whose
  /// ak_launch names other steps than its source's text did, clusters, persistent grids or tensor
  /// maps beside a plan, a step's parameters, and every check of check_launch_plan.
  static Result<std::optional<PlannedSteps>> load(GpuContext& gpu, const KernelSpec& spec, const LoadedModule& module,
                                                  const CompileOutput& compiled, uint64_t scratch_cap_bytes);

  /// The plan evaluated at (shape, d) within the limits, allocating nothing: a shape no stage
  /// declared (a timed shape of the config's) is checked before it is timed.
  Status check_at(const Shape& shape, DType d) const;
  /// Readies a launch at (shape, d): the plan evaluated there, the scratch allocated (kept while
  /// the launches stay at that shape and dtype), shared memory above 48 KiB allowed per step.
  Status prepare(const Shape& shape, DType d) const;
  /// Enqueues 0xFF over every scratch buffer of the prepared shape: nothing survives a launch.
  Status poison_scratch(CUstream s) const;
  /// Enqueues every step in order (preparing first when the shape or dtype changed). The first
  /// failing launch's CUresult, as is.
  CUresult launch(const KernelSpec& spec, DType d, const Shape& shape, const RunBuffers& b, CUstream s) const;

  size_t steps() const { return functions_.size(); }
  const std::map<DType, CUfunction>& first_functions() const { return functions_.front(); }
  const std::map<DType, std::string>& first_names() const { return names_.front(); }
  /// The threads of the first step's block at `shape` (what a verdict reports as the block).
  int first_block_threads(const Shape& shape, DType d) const;
  const LaunchPlan& plan() const { return plan_; }

 private:
  PlannedSteps() = default;
  GpuContext* gpu_ = nullptr;
  LaunchPlan plan_;
  std::shared_ptr<const UserTypeSpec> user_;
  LaunchLimits limits_;
  std::vector<std::map<DType, CUfunction>> functions_;   ///< per step
  std::vector<std::map<DType, std::string>> names_;
  /// The launch readied last: its shape, dtype, plan and scratch.
  struct Prepared {
    bool ready = false;
    Shape shape;
    DType dtype = DType::F32;
    PlanAtShape at;
    std::vector<DeviceBuffer> scratch;
  };
  mutable std::shared_ptr<Prepared> prepared_ = std::make_shared<Prepared>();
  mutable std::map<CUfunction, int64_t> smem_allowed_;
};

}  // namespace ak
