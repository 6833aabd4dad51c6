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

/// The timing of a run: CUPTI's durations when it handed back one per launch; else the CUDA
/// events around each launch (launch overhead included), with `source` saying why.
Timing choose_samples(const std::vector<double>& cupti_us, const std::vector<double>& event_us);

struct BenchmarkPlan {
  int warmup = 10;
  int repetitions = 100;
};

/// Kernels slower than these budgets get fewer launches (never fewer than kMinRepetitions timed).
inline constexpr double kWarmupBudgetMs = 1000, kTimingBudgetMs = 3000;
inline constexpr int kMinRepetitions = 10;
/// The plan cut to the budgets, given how long the first warm-up launch took.
BenchmarkPlan fit_plan(const BenchmarkPlan& plan, double first_launch_ms);

/// Times `launch` (which enqueues one launch of the kernel named `kernel_name`). An Error
/// carries a CUDA failure; `sticky` is set when the context is gone.
Result<Timing> time_kernel(GpuContext& gpu, const std::string& kernel_name,
                           const std::function<CUresult()>& launch, const BenchmarkPlan& plan,
                           bool& sticky);

}  // namespace ak
