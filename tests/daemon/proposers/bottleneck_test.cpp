// What limits a kernel, from recorded counter readings: each limit from the readings that make
// it, in the order an engineer would check them.
#include <catch2/catch.hpp>

#include "daemon/proposers/bottleneck.hpp"

using namespace ak;

namespace {

HardwareCounters readings(double dram, double sm, std::vector<StallShare> stalls = {}) {
  HardwareCounters c;
  c.passes = 5;
  c.kernels = 1;
  c.dram_pct = dram;
  c.sm_pct = sm;
  c.achieved_occupancy_pct = 80;
  c.tensor_pct = 0;
  c.bank_conflicts = 0;
  c.bank_conflict_ratio = 0;
  c.stalls = std::move(stalls);
  return c;
}

}  // namespace

TEST_CASE("DRAM near its peak is memory-bound, said in an engineer's words", "[bottleneck]") {
  Bottleneck b = diagnose(readings(91, 30), 32, 0);
  CHECK(b.limit == Limit::Memory);
  CHECK(b.sentence() == "memory-bound (at 91% of DRAM peak): fewer bytes, not more threads");
}

TEST_CASE("spilled registers come first, whatever else the counters say", "[bottleneck]") {
  Bottleneck b = diagnose(readings(91, 30), 255, 96);
  CHECK(b.limit == Limit::Registers);
  CHECK_THAT(b.sentence(), Catch::Contains("255 registers a thread, 96 bytes spilled"));
}

TEST_CASE("a busy tensor pipe is tensor-core-bound, a busy SM compute-bound", "[bottleneck]") {
  HardwareCounters c = readings(30, 75);
  c.tensor_pct = 72;
  CHECK(diagnose(c, 168, 0).limit == Limit::TensorPipe);
  c.tensor_pct = 5;
  CHECK(diagnose(c, 40, 0).limit == Limit::Compute);
}

TEST_CASE("most shared-memory traffic being conflict replays names the conflicts", "[bottleneck]") {
  HardwareCounters c = readings(20, 40);
  c.bank_conflict_ratio = 0.9;
  Bottleneck b = diagnose(c, 32, 0);
  CHECK(b.limit == Limit::SharedConflicts);
  CHECK_THAT(b.sentence(), Catch::Contains("90% of shared-memory wavefronts are conflicts") && Catch::Contains("pad or swizzle"));
}

TEST_CASE("occupancy capped by registers, with nothing near its peak, is register-limited", "[bottleneck]") {
  HardwareCounters c = readings(25, 30);
  c.occupancy = OccupancyLimit{1, 25, "registers", 1, -1, 4, 32};
  Bottleneck b = diagnose(c, 128, 0);
  CHECK(b.limit == Limit::Registers);
  CHECK_THAT(b.sentence(), Catch::Contains("128 registers a thread cap occupancy at 25%"));
  // The same cap at full occupancy is no limit.
  c.occupancy->theoretical_pct = 100;
  CHECK(diagnose(c, 128, 0).limit != Limit::Registers);
}

TEST_CASE("with no resource near its peak, the warps' main wait decides", "[bottleneck]") {
  CHECK(diagnose(readings(20, 30, {{"barrier", 0.45}, {"long_scoreboard", 0.2}}), 90, 0).limit == Limit::Barrier);
  Bottleneck latency = diagnose(readings(35, 20, {{"long_scoreboard", 0.6}, {"selected", 0.2}}), 30, 0);
  CHECK(latency.limit == Limit::MemoryLatency);
  CHECK_THAT(latency.sentence(), Catch::Contains("60% of warp cycles waiting on global memory at 35% of DRAM peak"));
  CHECK(diagnose(readings(20, 30, {{"selected", 0.9}}), 30, 0).limit == Limit::Unknown);
}

TEST_CASE("counters that could not be read decide nothing and say why", "[bottleneck]") {
  Bottleneck b = diagnose(HardwareCounters::unavailable_because("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"), 32, 0);
  CHECK(b.limit == Limit::Unknown);
  CHECK(b.sentence() == "counters unavailable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  CHECK(counter_lines(HardwareCounters::unavailable_because("off")) == std::vector<std::string>{"counters unavailable: off"});
}

TEST_CASE("the readable lines show every reading, and a missing one as a dash", "[bottleneck]") {
  HardwareCounters c = readings(91, 30, {{"long_scoreboard", 0.7}, {"selected", 0.3}});
  c.l2_hit_pct.reset();
  c.occupancy = OccupancyLimit{8, 100, "warps", 8, -1, 8, 32};
  c.missing = {"L2 hit rate"};
  auto lines = counter_lines(c);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "DRAM 91.0% of peak, SM 30.0% of peak, tensor pipe 0.0%");
  CHECK(lines[1] == "occupancy 80.0% achieved, 100% theoretical (8 blocks an SM, limited by warps)");
  CHECK_THAT(lines[2], Catch::StartsWith("L1 hit -, L2 hit -, bank conflicts 0"));
  CHECK(lines[3] == "warps: 70% waiting on global memory, 30% issuing");
  CHECK_THAT(lines[4], Catch::Contains("5 replay passes") && Catch::Contains("not given by this GPU: L2 hit rate"));
}
