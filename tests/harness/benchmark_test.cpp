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

TEST_CASE("a slow kernel gets fewer launches, never fewer than ten timed", "[benchmark]") {
  BenchmarkPlan plan{10, 100};
  auto fast = fit_plan(plan, 0.1);
  CHECK(fast.warmup == 10);
  CHECK(fast.repetitions == 100);
  auto slow = fit_plan(plan, 150.0);  // a reference attention: 150 ms a launch
  CHECK(slow.warmup == 6);
  CHECK(slow.repetitions == 20);
  auto glacial = fit_plan(plan, 5000.0);
  CHECK(glacial.warmup == 1);
  CHECK(glacial.repetitions == kMinRepetitions);
  CHECK(fit_plan({3, 5}, 5000.0).repetitions == 5);  // never more than asked
}

TEST_CASE("CUPTI's durations are used when it hands back every launch, else the events, saying so", "[benchmark]") {
  std::vector<double> events{12, 11, 13};
  Timing full = choose_samples({10, 9, 11}, events);
  CHECK(full.source == "CUPTI");
  CHECK(full.median_us == 10);
  CHECK(full.event_median_us == 12);
  Timing short_of = choose_samples({}, events);
  CHECK(short_of.median_us == 12);
  CHECK(short_of.samples == 3);
  CHECK(short_of.source == "CUDA events: CUPTI handed back 0 of 3 kernel records");
}
