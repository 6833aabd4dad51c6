#include "harness/judging/benchmark.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>


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

std::vector<double> launch_durations_us(const std::vector<CuptiKernelTimer::Span>& spans, const std::vector<int>& steps) {
  size_t total = 0;
  for (int n : steps) total += size_t(std::max(n, 1));
  if (spans.size() != total) return {};
  std::vector<double> out;
  size_t at = 0;
  for (int n : steps) {
    const size_t last = at + size_t(std::max(n, 1)) - 1;
    out.push_back(double(spans[last].end - spans[at].start) / 1000.0);
    at = last + 1;
  }
  return out;
}

WindowTimings window_timings(int kernels, const std::vector<int>& kernel_of, const std::vector<double>& event_us,
                             const std::vector<double>& cupti_us, const std::string& shortfall, const std::string& name) {
  std::vector<std::vector<double>> cupti_k(static_cast<size_t>(kernels)), events_k(static_cast<size_t>(kernels));
  const bool all_records = cupti_us.size() == kernel_of.size();
  for (size_t i = 0; i < kernel_of.size(); ++i) {
    events_k[size_t(kernel_of[i])].push_back(event_us[i]);
    if (all_records) cupti_k[size_t(kernel_of[i])].push_back(cupti_us[i]);
  }
  WindowTimings out;
  for (int k = 0; k < kernels; ++k) {
    out.timings.push_back(summarize(all_records ? cupti_k[size_t(k)] : events_k[size_t(k)], events_k[size_t(k)]));
    if (!all_records) {
      out.timings.back().source = "CUDA events: CUPTI handed back " + std::to_string(cupti_us.size()) + " of " +
                                  std::to_string(kernel_of.size()) + " kernel records (" + shortfall + ")";
      spdlog::warn("timing {}: {}", name, out.timings.back().source);
    }
  }
  if (kernels == 2) {
    out.paired = all_records ? pair_up(cupti_k[0], cupti_k[1]) : pair_up(events_k[0], events_k[1]);
    out.paired.best_spread = out.timings[1].spread();
  }
  return out;
}

}  // namespace ak
