// What a counters pass that stopped tells the verdict: whose failure it was and where it stopped.
// The pass itself needs a GPU (tests/harness/judging/gpu_counters_test.cpp).
#include <catch2/catch.hpp>

#include "harness/gpu/range_profiler.hpp"
#include "harness/judging/counters_pass.hpp"

using namespace ak;
using Catch::Contains;
using Catch::StartsWith;

TEST_CASE("a pass that failed its checks withholds its readings and says what was wrong", "[counters]") {
  const std::string why = counters_pass_stopped("checking", error("wrong output during the counters pass's launch 2"));
  CHECK_THAT(why, StartsWith("the counters pass failed its checks, so its readings are withheld: "));
  CHECK_THAT(why, Contains("launch 2"));
}

TEST_CASE("CUPTI's refusal is said as CUPTI said it, wherever the pass was", "[counters]") {
  for (const char* step : {"allocating", "preparing", "launching", "checking"}) {
    const std::string why =
        counters_pass_stopped(step, error(std::string(kCountersUnavailable) + "enabling the range profiler failed"));
    CHECK(why == "enabling the range profiler failed");
  }
}

TEST_CASE("the judge's own failure is the harness's, never the kernel's, even while checking", "[counters]") {
  Error dead = error("the reference process failed to judge the outputs: it died");
  dead.harness = true;
  const std::string why = counters_pass_stopped("checking", dead);
  CHECK_THAT(why, Contains("the harness's own failure, not the candidate's"));
  CHECK_THAT(why, !Contains("failed its checks"));
}

TEST_CASE("a pass that stopped before its checks says where", "[counters]") {
  CHECK_THAT(counters_pass_stopped("allocating", error("out of memory")), StartsWith("the counters pass could not allocate"));
  CHECK_THAT(counters_pass_stopped("preparing", error("x")), StartsWith("the counters pass could not prepare a launch"));
  CHECK_THAT(counters_pass_stopped("launching", error("illegal address")), StartsWith("the counters pass's launch failed"));
}
