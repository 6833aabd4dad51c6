#include <catch2/catch.hpp>

#include "harness/benchmark.hpp"

using namespace ak;

TEST_CASE("timing statistics: median, percentiles and spread of the samples", "[benchmark]") {
  std::vector<double> us;
  for (int i = 100; i >= 1; --i) us.push_back(100.0 + i * 0.1);  // 100.1 .. 110.0, unsorted
  Timing t = summarize(us, {101, 102, 103});
  CHECK(t.samples == 100);
  CHECK(t.median_us == Approx(105.05));
  CHECK(t.min_us == Approx(100.1));
  CHECK(t.max_us == Approx(110.0));
  CHECK(t.p10_us == Approx(101.09));
  CHECK(t.p90_us == Approx(109.01));
  CHECK(t.event_median_us == Approx(102));
  CHECK(t.spread() == Approx((109.01 - 101.09) / 105.05));
}

TEST_CASE("no samples give an empty timing, not a division by zero", "[benchmark]") {
  Timing t = summarize({}, {});
  CHECK(t.samples == 0);
  CHECK(t.spread() == 0);
}
