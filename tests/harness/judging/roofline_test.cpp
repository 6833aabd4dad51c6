#include <catch2/catch.hpp>

#include "harness/judging/roofline.hpp"
#include "kernels_cuda/registry.hpp"

using namespace ak;

TEST_CASE("a memory-bound kernel's pct_peak is its bandwidth over the measured peak", "[roofline]") {
  // rmsnorm 8192x8192 fp16 moves 2 * 128 MiB + 16 KiB.
  DevicePeaks peaks{3000, 0};
  const double bytes = rmsnorm_spec().bytes({8192, 8192}, DType::F16);
  const double us_at_peak = bytes / 3000e9 * 1e6;
  Roofline r = roofline(rmsnorm_spec(), {8192, 8192}, DType::F16, us_at_peak * 2, peaks);
  CHECK(r.unit == "GB/s");
  CHECK(r.bound == "memory");
  CHECK(r.throughput == Approx(1500));
  CHECK(r.pct_peak == Approx(0.5));
  CHECK_FALSE(r.suspect);
}

TEST_CASE("a timing faster than the device can be is suspect", "[roofline]") {
  DevicePeaks peaks{3000, 0};
  const double bytes = softmax_spec().bytes({8192, 8192}, DType::F16);
  const double us_at_peak = bytes / 3000e9 * 1e6;
  CHECK_FALSE(roofline(softmax_spec(), {8192, 8192}, DType::F16, us_at_peak / 1.05, peaks).suspect);
  CHECK(roofline(softmax_spec(), {8192, 8192}, DType::F16, us_at_peak / 1.2, peaks).suspect);
  CHECK(roofline(softmax_spec(), {8192, 8192}, DType::F16, 2.0, peaks).suspect);   // "done" in 2 us
}

TEST_CASE("a candidate's timing goes into its verdict with its roofline, and one past the device makes it SUSPECT",
          "[roofline]") {
  DevicePeaks peaks{3000, 0};
  const double us_at_peak = softmax_spec().bytes({8192, 8192}, DType::F16) / 3000e9 * 1e6;
  Timing t;
  t.median_us = us_at_peak * 2;
  t.source = "CUDA events: CUPTI handed back 0 of 200 kernel records";
  Verdict v;
  CHECK(timing_on_roofline(v, softmax_spec(), {8192, 8192}, DType::F16, t, peaks));
  CHECK(v.timing->median_us == Approx(us_at_peak * 2));
  CHECK(v.pct_peak == Approx(0.5));
  CHECK(v.throughput_unit == "GB/s");
  CHECK(v.notes == std::vector<std::string>{"timed with CUDA events: CUPTI handed back 0 of 200 kernel records"});
  CHECK(v.failed_stage.empty());

  Verdict fast;
  t.median_us = 2.0;
  t.source = "CUPTI";
  CHECK_FALSE(timing_on_roofline(fast, softmax_spec(), {8192, 8192}, DType::F16, t, peaks));
  CHECK(fast.correctness == Correctness::Suspect);
  CHECK(fast.failed_stage == "benchmark");
  CHECK_THAT(fast.message, Catch::Contains("faster than the device can be; the timing is not trusted"));
  CHECK(fast.notes.empty());
}
