#include <catch2/catch.hpp>

#include "harness/roofline.hpp"
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
