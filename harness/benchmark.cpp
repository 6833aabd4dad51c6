#include "harness/benchmark.hpp"

#include <algorithm>
#include <cmath>

#include "harness/cupti_timer.hpp"

#include <spdlog/spdlog.h>

namespace ak {
namespace {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double pos = p * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = size_t(std::ceil(pos));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

struct Event {
  const CudaDriver& d;
  CUevent e = nullptr;
  explicit Event(const CudaDriver& drv) : d(drv) { d.cuEventCreate(&e, CU_EVENT_DEFAULT); }
  ~Event() {
    if (e) d.cuEventDestroy(e);
  }
};

}  // namespace

Timing choose_samples(const std::vector<double>& cupti_us, const std::vector<double>& event_us) {
  if (cupti_us.size() == event_us.size()) return summarize(cupti_us, event_us);
  Timing t = summarize(event_us, event_us);
  t.source = "CUDA events: CUPTI handed back " + std::to_string(cupti_us.size()) + " of " +
             std::to_string(event_us.size()) + " kernel records";
  return t;
}

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

Result<Timing> time_kernel(GpuContext& gpu, const std::string& kernel_name,
                           const std::function<CUresult()>& launch, const BenchmarkPlan& plan,
                           bool& sticky) {
  const CudaDriver& d = gpu.driver();
  sticky = false;
  auto fail = [&](CUresult r, const std::string& when) -> Result<Timing> {
    sticky = cu_error_is_sticky(r);
    return error(when + ": " + cu_error_text(r));
  };
  // Writing a buffer twice the size of L2 before each launch evicts the previous launch's data.
  auto flush = gpu.alloc(std::max<size_t>(gpu.info().l2_bytes * 2, 64 << 20));
  if (!flush) return flush.error();
  // The first warm-up launch, timed, sizes the rest: a slow kernel (a reference attention takes
  // a tenth of a second) gets fewer launches so one timing stays within seconds, never below 10.
  Event w0(d), w1(d);
  d.cuEventRecord(w0.e, nullptr);
  if (CUresult r = launch(); r != CUDA_SUCCESS) return fail(r, "warm-up launch failed");
  d.cuEventRecord(w1.e, nullptr);
  if (CUresult r = d.cuCtxSynchronize(); r != CUDA_SUCCESS) return fail(r, "warm-up failed");
  float first_ms = 0;
  d.cuEventElapsedTime(&first_ms, w0.e, w1.e);
  const BenchmarkPlan sized = fit_plan(plan, first_ms);
  for (int i = 1; i < sized.warmup; ++i)
    if (CUresult r = launch(); r != CUDA_SUCCESS) return fail(r, "warm-up launch failed");
  if (CUresult r = d.cuCtxSynchronize(); r != CUDA_SUCCESS) return fail(r, "warm-up failed");

  if (auto s = CuptiKernelTimer::start(); !s) return s.error();
  std::vector<Event> starts, ends;
  starts.reserve(sized.repetitions);
  ends.reserve(sized.repetitions);
  for (int i = 0; i < sized.repetitions; ++i) {
    starts.emplace_back(d);
    ends.emplace_back(d);
    d.cuMemsetD8Async(flush->ptr(), (unsigned char)(i & 0xff), flush->bytes(), nullptr);
    d.cuEventRecord(starts.back().e, nullptr);
    if (CUresult r = launch(); r != CUDA_SUCCESS) {
      (void)CuptiKernelTimer::stop(kernel_name, 0);
      return fail(r, "timed launch failed");
    }
    d.cuEventRecord(ends.back().e, nullptr);
  }
  CUresult r = d.cuCtxSynchronize();
  auto cupti = CuptiKernelTimer::stop(kernel_name, size_t(sized.repetitions));
  if (r != CUDA_SUCCESS) return fail(r, "timed launches failed");
  if (!cupti) return cupti.error();
  std::vector<double> events;
  for (int i = 0; i < sized.repetitions; ++i) {
    float ms = 0;
    d.cuEventElapsedTime(&ms, starts[i].e, ends[i].e);
    events.push_back(double(ms) * 1000.0);
  }
  Timing t = choose_samples(*cupti, events);
  if (t.source != "CUPTI") spdlog::warn("timing {}: {}", kernel_name, t.source);
  return t;
}

}  // namespace ak
