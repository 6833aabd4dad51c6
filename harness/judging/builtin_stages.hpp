#pragma once
/// The five correctness stages of a built-in type (docs/design.md), judged by its reference kernel;
/// a user type's twin is harness/user_types/user_stages.hpp. In their fixed order: smoke, shape sweep,
/// numerical stability, determinism, edge cases. Each run draws fresh inputs from its own seed,
/// poisons the outputs first, checks every element against the reference and checks that the
/// inputs and the module's own memory were left untouched. The reference runs only after the
/// candidate's launch, so no expected output lies in device memory while a candidate runs.
#include <optional>
#include <string>

#include "harness/judging/stages.hpp"
#include "harness/module/device_checks.hpp"
#include "harness/module/kernel_launch.hpp"

namespace ak {

/// Runs a built-in type's candidate on one case and judges it against the reference kernel.
class BuiltinCaseRunner {
 public:
  BuiltinCaseRunner(GpuContext& gpu, const DeviceChecks& checks, const KernelSpec& spec,
                    const LaunchableKernel& candidate, const LaunchableKernel& reference)
      : gpu_(gpu), checks_(checks), spec_(spec), cand_(candidate), ref_(reference) {}

  /// Runs the candidate once (repeats > 1: again on the same inputs, bitwise equal each time).
  std::optional<StageFailure> run(const RunCase& c, int repeats = 1);
  /// The most device memory the candidate's buffers took, in bytes.
  size_t peak_bytes() const { return peak_bytes_; }
  /// After a launch of `k`: empty when it left its module memory as it found it, else where not.
  Result<std::string> module_memory_change(const LaunchableKernel& k);

 private:
  GpuContext& gpu_;
  const DeviceChecks& checks_;
  const KernelSpec& spec_;
  const LaunchableKernel& cand_;
  const LaunchableKernel& ref_;
  size_t peak_bytes_ = 0;
  DeviceBuffer memory_slot_;   ///< where check_module_memory writes the first changed byte
};

/// Runs the stages in order into v.stages, stopping at the first failure, which fills the
/// verdict's correctness, message and failed_* fields. Returns true when all five passed.
/// `seed` draws the cases' inputs and `sample_seed` their sampled rows (EvaluationSeeds).
bool run_builtin_stages(BuiltinCaseRunner& runner, const KernelSpec& spec, uint64_t seed, uint64_t sample_seed,
                        Verdict& v, const StageListener& on_stage);

}  // namespace ak
