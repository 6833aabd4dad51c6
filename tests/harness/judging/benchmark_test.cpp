#include <catch2/catch.hpp>

#include "harness/judging/benchmark.hpp"

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

TEST_CASE("paired timings: the median ratio of candidate to best and the noise of that median", "[benchmark]") {
  // The GPU slows down in the middle: both kernels of a pair see it, the ratio does not.
  std::vector<double> best, cand;
  for (int i = 0; i < 100; ++i) {
    double moment = (i > 40 && i < 60) ? 1.3 : 1.0;
    best.push_back(100.0 * moment * (1 + 0.002 * (i % 5)));
    cand.push_back(97.0 * moment * (1 + 0.002 * ((i + 2) % 5)));
  }
  PairedTiming p = pair_up(cand, best);
  CHECK(p.pairs == 100);
  CHECK(p.ratio == Approx(0.97).epsilon(0.01));
  CHECK(p.noise > 0);
  CHECK(p.noise < 0.01);
  CHECK(p.best_us == Approx(100.4).epsilon(0.01));
  CHECK(p.clears(0.01));          // 3% faster, well beyond 1% and the noise
  CHECK_FALSE(p.clears(0.03));    // not 3% beyond the noise
}

TEST_CASE("a paired ratio within the noise is not a gain, and no pairs never clear", "[benchmark]") {
  std::vector<double> best, cand;
  for (int i = 0; i < 100; ++i) {
    best.push_back(100.0 + (i * 37 % 11));
    cand.push_back(98.8 + (i * 53 % 11));   // 1.2% faster on average, but the pairs scatter by 10%
  }
  PairedTiming p = pair_up(cand, best);
  CHECK(p.noise > 0.01);
  CHECK_FALSE(p.clears(0.01));
  CHECK_FALSE(PairedTiming{}.clears(0.01));
  CHECK(pair_up({}, {}).pairs == 0);
}

TEST_CASE("a timed window uses CUPTI's durations when every launch has a record, else the events', saying why",
          "[benchmark]") {
  // Two kernels launched in turn: the candidate (0) at 10 us, the best (1) at 20 us by CUPTI.
  const std::vector<int> kernel_of{0, 1, 0, 1, 0, 1};
  const std::vector<double> events{12, 22, 12, 22, 12, 22}, cupti{10, 20, 10, 20, 10, 20};
  WindowTimings all = window_timings(2, kernel_of, events, cupti, "", "k");
  REQUIRE(all.timings.size() == 2);
  CHECK(all.timings[0].median_us == Approx(10));
  CHECK(all.timings[1].median_us == Approx(20));
  CHECK(all.timings[0].event_median_us == Approx(12));
  CHECK(all.timings[0].source == "CUPTI");
  CHECK(all.paired.pairs == 3);
  CHECK(all.paired.ratio == Approx(0.5));

  WindowTimings short_of = window_timings(2, kernel_of, events, {10, 20, 10}, "3 records of other kernels", "k");
  CHECK(short_of.timings[0].median_us == Approx(12));
  CHECK(short_of.timings[1].source == "CUDA events: CUPTI handed back 3 of 6 kernel records (3 records of other kernels)");
  CHECK(short_of.paired.ratio == Approx(12.0 / 22));

  WindowTimings alone = window_timings(1, {0, 0}, {5, 7}, {4, 6}, "", "k");
  CHECK(alone.timings.size() == 1);
  CHECK(alone.paired.pairs == 0);
}
