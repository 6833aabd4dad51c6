#pragma once
/// Statistics of timed launches: medians and spreads, the paired comparison of two kernels, and
/// how many launches a kernel gets. The launches themselves: builtin_timing.hpp and user_timing.hpp.
#include <functional>
#include <string>
#include <vector>

#include "harness/gpu/cupti_timer.hpp"
#include "harness/gpu/gpu_context.hpp"
#include "harness/judging/verdict.hpp"

namespace ak {

/// Median, percentiles and extremes of a set of durations (microseconds).
Timing summarize(std::vector<double> cupti_us, std::vector<double> event_us);

struct BenchmarkPlan {
  int warmup = 10;
  int repetitions = 100;
};

/// Kernels slower than these budgets get fewer launches (never fewer than kMinRepetitions timed).
inline constexpr double kWarmupBudgetMs = 1000, kTimingBudgetMs = 3000;
inline constexpr int kMinRepetitions = 10;
/// The plan cut to the budgets, given how long the first warm-up launch took.
BenchmarkPlan fit_plan(const BenchmarkPlan& plan, double first_launch_ms);

/// Pairs the launches of a candidate (a) and the best (b), timed alternately on the same inputs:
/// the median of a_i / b_i, and the half-width of its 95% interval from the order statistics
/// (distribution-free: a GPU's durations are not normal).
PairedTiming pair_up(const std::vector<double>& a, const std::vector<double>& b);

/// Each launch's time from CUPTI's kernel records, in launch order: launch i ran
/// `steps[i]` kernels (a launch plan's steps, else 1), its time from its first kernel's start to
/// its last one's end, the gaps between them included. Empty when the records do not add up to
/// the launches' kernels (CUPTI dropped some): the caller times with events instead.
std::vector<double> launch_durations_us(const std::vector<CuptiKernelTimer::Span>& spans, const std::vector<int>& steps);

/// What a timed window of launches says of each kernel launched in it.
struct WindowTimings {
  std::vector<Timing> timings;   ///< one per kernel
  PairedTiming paired;           ///< with two kernels, the first paired with the second
};
/// The timings of `kernels` kernels launched in turn, launch i of kernel kernel_of[i], timed by
/// CUDA events (event_us[i]) and by CUPTI (cupti_us, one record per launch in launch order): the
/// CUPTI durations when it handed back one per launch, else the events' with each Timing's source
/// saying why (`shortfall`: what CUPTI gave instead) and a warning naming `name`.
WindowTimings window_timings(int kernels, const std::vector<int>& kernel_of, const std::vector<double>& event_us,
                             const std::vector<double>& cupti_us, const std::string& shortfall, const std::string& name);

}  // namespace ak
