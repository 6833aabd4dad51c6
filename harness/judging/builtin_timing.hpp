#pragma once
/// The judged timing of a built-in type, its reference kernel judging the checked launches (a user
/// type's twin: harness/user_types/user_timing.hpp). The timed launches, judged as well as timed. A
/// kernel must not be able to tell that it is timed, nor which role it plays (the candidate, or the
/// best it is paired with), so every kernel given is treated alike: before every launch, warm-up
/// ones included, fresh inputs are drawn on the GPU (no two pairs see the same contents), the
/// outputs and scratch are poisoned, the counters zeroed and the module's memory reset, then the L2
/// is flushed; after every launch the module's memory and the counters are checked. A few launches
/// of each kernel, chosen at random (EvaluationSeeds::timing_choices), are judged right after they
/// ran against the reference for their own inputs, and what the judging used is wiped before the
/// next launch, so no device memory tells a later launch whether, or which, launches were checked.
/// With two kernels the launches interleave pair by pair on the same inputs, alternating which goes
/// first, starting with a random one; the first pair (both kernels) sizes the plan.
#include <optional>
#include <vector>

#include "harness/judging/benchmark.hpp"
#include "harness/judging/stages.hpp"
#include "harness/module/device_checks.hpp"
#include "harness/module/device_inputs.hpp"
#include "harness/module/kernel_launch.hpp"

namespace ak {

struct BuiltinTimingPlan {
  BenchmarkPlan launches;
  int checked_launches = 4;   ///< of each kernel's timed launches; 0: none (trusted kernels)
  uint64_t input_seed = 1;    ///< draws every launch's inputs (EvaluationSeeds::timing_inputs)
  uint64_t choice_seed = 1;   ///< checked launches, sampled rows, who goes first (timing_choices)
};

struct BuiltinTiming {
  std::vector<Timing> timings;                  ///< one per kernel, in the order given
  PairedTiming paired;                          ///< with two kernels: the first against the second
  std::vector<std::optional<StageFailure>> failures;  ///< per kernel: what its checks found
  size_t bytes = 0;                             ///< device memory the launch's buffers took
};

/// Times `kernels` (one, or a candidate and the best, sharing their entry point's name) at one
/// shape. `reference` judges the checked launches (may be null when checked_launches is 0). An
/// Error is a CUDA failure, with `sticky` set when the context is gone; a wrong timed output, a
/// counter left set or module memory left changed is that kernel's entry in `failures`.
Result<BuiltinTiming> builtin_timing(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks,
                                   const KernelSpec& spec,
                                   const Shape& shape, DType d, const std::vector<const LaunchableKernel*>& kernels,
                                   const LaunchableKernel* reference, const BuiltinTimingPlan& plan, bool& sticky);

}  // namespace ak
