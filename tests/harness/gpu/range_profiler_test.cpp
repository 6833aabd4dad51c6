// What the counters pass's metrics cost, by CUPTI's own count: its host library works out the
// replay passes of a metric set for a chip by name, no GPU needed. Every pass is one more judged
// launch of the candidate, so the count is the counters pass's cost.
#include <catch2/catch.hpp>

#include "harness/gpu/hardware_counters.hpp"
#include "harness/gpu/range_profiler.hpp"

using namespace ak;

TEST_CASE("the counters pass's metrics take two replay passes on Hopper, none of them dropped", "[counters]") {
  auto plan = plan_metrics("GH100", counter_metric_names());
  INFO((plan ? "" : plan.error().message));
  REQUIRE(plan.ok());
  CHECK(plan->passes >= 1);
  CHECK(plan->passes <= kCounterPassesOnHopper);
  CHECK(plan->dropped.empty());
  CHECK(plan->metrics.size() == counter_metric_names().size());
}

TEST_CASE("Nsight Compute's SM throughput alone would take several passes on Hopper", "[counters]") {
  // Why the pass reads its parts instead: this one metric costs more launches than the whole set.
  auto plan = plan_metrics("GH100", {"sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  REQUIRE(plan.ok());
  CHECK(plan->passes > kCounterPassesOnHopper);
}

TEST_CASE("the counters pass's metrics are read on the chips before and after Hopper too", "[counters]") {
  for (const char* chip : {"GA100", "AD102", "GB100"}) {
    auto plan = plan_metrics(chip, counter_metric_names());
    INFO(chip << ": " << (plan ? "" : plan.error().message));
    REQUIRE(plan.ok());
    CHECK(plan->dropped.empty());
    CHECK(plan->passes <= 3);
  }
}

TEST_CASE("a metric a chip does not have is dropped, not fatal", "[counters]") {
  auto plan = plan_metrics("GH100", {"gpu__time_duration.sum", "no_such_unit__metric.sum"});
  REQUIRE(plan.ok());
  CHECK(plan->metrics == std::vector<std::string>{"gpu__time_duration.sum"});
  CHECK(plan->dropped == std::vector<std::string>{"no_such_unit__metric.sum"});
}

TEST_CASE("a chip CUPTI does not know is an error that says so", "[counters]") {
  auto plan = plan_metrics("NOT_A_CHIP", counter_metric_names());
  REQUIRE_FALSE(plan.ok());
  CHECK_THAT(plan.error().message, Catch::StartsWith(kCountersUnavailable));
}
