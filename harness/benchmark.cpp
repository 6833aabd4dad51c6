#include "harness/benchmark.hpp"

#include <algorithm>
#include <cmath>


namespace ak {
namespace {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double pos = p * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = size_t(std::ceil(pos));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

}  // namespace

BenchmarkPlan fit_plan(const BenchmarkPlan& plan, double first_launch_ms) {
  BenchmarkPlan p = plan;
  if (first_launch_ms <= 0) return p;
  p.warmup = std::max(1, std::min(plan.warmup, int(kWarmupBudgetMs / first_launch_ms)));
  p.repetitions = std::max(std::min(plan.repetitions, kMinRepetitions),
                           std::min(plan.repetitions, int(kTimingBudgetMs / first_launch_ms)));
  return p;
}

Timing summarize(std::vector<double> cupti_us, std::vector<double> event_us) {
  Timing t;
  std::sort(cupti_us.begin(), cupti_us.end());
  std::sort(event_us.begin(), event_us.end());
  t.samples = int(cupti_us.size());
  if (cupti_us.empty()) return t;
  t.median_us = percentile(cupti_us, 0.5);
  t.p10_us = percentile(cupti_us, 0.1);
  t.p90_us = percentile(cupti_us, 0.9);
  t.min_us = cupti_us.front();
  t.max_us = cupti_us.back();
  t.event_median_us = percentile(event_us, 0.5);
  return t;
}

PairedTiming pair_up(const std::vector<double>& a, const std::vector<double>& b) {
  PairedTiming p;
  std::vector<double> ratios, best;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (b[i] > 0) ratios.push_back(a[i] / b[i]), best.push_back(b[i]);
  if (ratios.empty()) return p;
  std::sort(ratios.begin(), ratios.end());
  std::sort(best.begin(), best.end());
  const double n = double(ratios.size()), half = 0.98 * std::sqrt(n);  // 1.96 / 2 standard deviations
  const size_t lo = size_t(std::max(0.0, std::floor((n - 1) / 2 - half)));
  const size_t hi = size_t(std::min(n - 1, std::ceil((n - 1) / 2 + half)));
  p.pairs = int(ratios.size());
  p.ratio = percentile(ratios, 0.5);
  p.best_us = percentile(best, 0.5);
  p.noise = std::max(p.ratio - ratios[lo], ratios[hi] - p.ratio);
  return p;
}

}  // namespace ak
