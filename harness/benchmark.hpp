#pragma once
/// Timing one kernel at one shape: warm-up, then repetitions with the L2 flushed before each,
/// durations from CUPTI, cross-checked with CUDA events. Also statistics on samples.
#include <functional>
#include <vector>

#include "harness/gpu_context.hpp"
#include "harness/verdict.hpp"

namespace ak {

/// Median, percentiles and extremes of a set of durations (microseconds).
Timing summarize(std::vector<double> cupti_us, std::vector<double> event_us);

struct BenchmarkPlan {
  int warmup = 10;
  int repetitions = 100;
};

/// Times `launch` (which enqueues one launch of the kernel named `kernel_name`). An Error
/// carries a CUDA failure; `sticky` is set when the context is gone.
Result<Timing> time_kernel(GpuContext& gpu, const std::string& kernel_name,
                           const std::function<CUresult()>& launch, const BenchmarkPlan& plan,
                           bool& sticky);

}  // namespace ak
