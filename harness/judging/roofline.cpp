#include "harness/judging/roofline.hpp"

#include <algorithm>

namespace ak {

Roofline roofline(const KernelSpec& spec, const Shape& shape, DType d, double median_us, const DevicePeaks& peaks) {
  Roofline r;
  const double seconds = median_us * 1e-6;
  const double bytes = spec.bytes(shape, d), flops = spec.flops(shape);
  const double gbps = bytes / seconds / 1e9, tflops = flops / seconds / 1e12;
  r.unit = spec.metric == Metric::GBps ? "GB/s" : "TFLOPS";
  r.throughput = spec.metric == Metric::GBps ? gbps : tflops;
  const double memory_time = peaks.bandwidth_gbps > 0 ? bytes / (peaks.bandwidth_gbps * 1e9) : 0;
  const double compute_time = peaks.compute_tflops > 0 ? flops / (peaks.compute_tflops * 1e12) : 0;
  const bool memory_bound = memory_time >= compute_time;
  r.bound = memory_bound ? "memory" : "compute";
  r.peak = memory_bound ? peaks.bandwidth_gbps : peaks.compute_tflops;
  if (r.unit == "TFLOPS" && memory_bound) r.peak = peaks.compute_tflops;
  r.pct_peak = seconds > 0 ? std::max(memory_time, compute_time) / seconds : 0;
  r.suspect = r.pct_peak > kSuspectFactor;
  return r;
}

bool timing_on_roofline(Verdict& v, const KernelSpec& spec, const Shape& shape, DType d, const Timing& timing,
                        const DevicePeaks& peaks) {
  v.timing = timing;
  if (timing.source != "CUPTI") v.notes.push_back("timed with " + timing.source);
  const Roofline roof = roofline(spec, shape, d, timing.median_us, peaks);
  v.throughput = roof.throughput;
  v.throughput_unit = roof.unit;
  v.pct_peak = roof.pct_peak;
  v.peak_used = roof.peak;
  if (!roof.suspect) return true;
  v.correctness = Correctness::Suspect;
  v.message = "benchmark: " + std::to_string(roof.throughput) + " " + roof.unit + " is " + std::to_string(int(roof.pct_peak * 100)) +
              "% of the measured peak (" + std::to_string(int(roof.peak)) + " " + roof.unit +
              "): faster than the device can be; the timing is not trusted";
  v.failed_stage = "benchmark";
  return false;
}

}  // namespace ak
