#pragma once
/// The timed launches, judged as well as timed. A kernel must not be able to tell that it is
/// timed, so the timed launches are treated as the checks treat theirs: before every launch,
/// warm-up ones included, fresh inputs are drawn on the GPU (no two launches see the same
/// contents), the outputs and scratch are poisoned and the counters zeroed, then the L2 is
/// flushed (so the poison and the inputs do not warm it). The outputs of a few launches, chosen
/// at random, are copied aside and compared afterwards with the reference for the inputs of that
/// very launch; their inputs must come back unchanged, and the counters must be zero after every
/// launch. With two kernels (a candidate and the current best) the launches interleave pair by
/// pair on the same inputs, alternating which goes first.
#include <functional>
#include <optional>
#include <vector>

#include "harness/benchmark.hpp"
#include "harness/device_checks.hpp"
#include "harness/device_inputs.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/stages.hpp"

namespace ak {

/// One kernel to time: the name CUPTI records it under, and its launch on a set of buffers.
struct TimedKernel {
  std::string name;
  std::function<CUresult(const RunBuffers&)> launch;
};

struct JudgedTimingPlan {
  BenchmarkPlan launches;
  int checked_launches = 4;   ///< of the first kernel's timed launches; 0: none (trusted kernels)
  uint64_t seed = 1;          ///< draws every launch's inputs and which launches are checked
};

struct JudgedTiming {
  std::vector<Timing> timings;            ///< one per kernel, in the order given
  PairedTiming paired;                    ///< with two kernels: the first against the second
  std::optional<StageFailure> failure;    ///< what the checks of the timed launches found
  size_t bytes = 0;                       ///< device memory the launch's buffers took
};

/// Times `kernels` (one, or a candidate and the best) at one shape. `reference` judges the checked
/// launches (may be null when checked_launches is 0). An Error is a CUDA failure, with `sticky`
/// set when the context is gone; a wrong timed output is `failure`.
Result<JudgedTiming> judged_timing(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks,
                                   const KernelSpec& spec,
                                   const Shape& shape, DType d, const std::vector<TimedKernel>& kernels,
                                   const LaunchableKernel* reference, const JudgedTimingPlan& plan, bool& sticky);

}  // namespace ak
