#include "harness/benchmark.hpp"

#include <algorithm>
#include <cmath>

#include "harness/cupti_timer.hpp"

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
  for (int i = 0; i < plan.warmup; ++i)
    if (CUresult r = launch(); r != CUDA_SUCCESS) return fail(r, "warm-up launch failed");
  if (CUresult r = d.cuCtxSynchronize(); r != CUDA_SUCCESS) return fail(r, "warm-up failed");

  if (auto s = CuptiKernelTimer::start(); !s) return s.error();
  std::vector<Event> starts, ends;
  starts.reserve(plan.repetitions);
  ends.reserve(plan.repetitions);
  for (int i = 0; i < plan.repetitions; ++i) {
    starts.emplace_back(d);
    ends.emplace_back(d);
    d.cuMemsetD8Async(flush->ptr(), (unsigned char)(i & 0xff), flush->bytes(), nullptr);
    d.cuEventRecord(starts.back().e, nullptr);
    if (CUresult r = launch(); r != CUDA_SUCCESS) {
      (void)CuptiKernelTimer::stop(kernel_name);
      return fail(r, "timed launch failed");
    }
    d.cuEventRecord(ends.back().e, nullptr);
  }
  CUresult r = d.cuCtxSynchronize();
  auto cupti = CuptiKernelTimer::stop(kernel_name);
  if (r != CUDA_SUCCESS) return fail(r, "timed launches failed");
  if (!cupti) return cupti.error();
  if (int(cupti->size()) != plan.repetitions)
    return error("CUPTI recorded " + std::to_string(cupti->size()) + " launches of " + kernel_name +
                 " where " + std::to_string(plan.repetitions) + " were made");
  std::vector<double> events;
  for (int i = 0; i < plan.repetitions; ++i) {
    float ms = 0;
    d.cuEventElapsedTime(&ms, starts[i].e, ends[i].e);
    events.push_back(double(ms) * 1000.0);
  }
  return summarize(*cupti, events);
}

}  // namespace ak
