// counters.tsv: a row per judged experiment, written and read back, beside results.tsv.
#include <catch2/catch.hpp>

#include "daemon/proposers/bottleneck.hpp"
#include "daemon/run_folder/counters_table.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

CountersRow memory_bound_row(long long n) {
  CountersRow r;
  r.experiment = n;
  r.tag = "rmsnorm";
  r.registers = 32;
  HardwareCounters& c = r.counters;
  c.passes = 5;
  c.dram_pct = 91.25, c.sm_pct = 30.5, c.achieved_occupancy_pct = 85, c.l1_hit_pct = 2, c.l2_hit_pct = 40;
  c.tensor_pct = 0, c.bank_conflicts = 12, c.bank_conflict_ratio = 0.001;
  c.stalls = {{"long_scoreboard", 0.62}, {"selected", 0.2}};
  c.occupancy = OccupancyLimit{8, 100, "warps", 8, -1, 8, 32};
  r.bottleneck = limit_name(diagnose(c, r.registers, r.spill_bytes).limit);
  return r;
}

}  // namespace

TEST_CASE("a counters row keeps its readings, the largest stall and the bottleneck in columns", "[counters][results]") {
  const std::string line = format_counters_row(memory_bound_row(7));
  CHECK(line == "7\trmsnorm\t91.25\t30.50\t85.00\t100.00\twarps\t2.00\t40.00\t0.00\t12\t0.0010\tlong_scoreboard\t0.6200\t32\t0\t5\t"
                "memory-bound\t");
  auto back = parse_counters_row(line);
  REQUIRE(back.ok());
  CHECK(back->experiment == 7);
  CHECK(back->counters.dram_pct == Approx(91.25));
  CHECK(back->counters.occupancy->limiter == "warps");
  CHECK(back->counters.stalls.size() == 1);
  CHECK(back->counters.available());
  CHECK(back->bottleneck == "memory-bound");
}

TEST_CASE("a row without readings keeps why, on one line whatever the reason says", "[counters][results]") {
  CountersRow r;
  r.experiment = 3;
  r.tag = "softmax";
  r.counters = HardwareCounters::unavailable_because("refused\tby the driver\nsee docs");
  r.bottleneck = "memory-bound";   // a diagnosis without readings is not written
  const std::string line = format_counters_row(r);
  CHECK(line.find('\n') == std::string::npos);
  auto back = parse_counters_row(line);
  REQUIRE(back.ok());
  CHECK_FALSE(back->counters.available());
  CHECK(back->counters.unavailable == "refused by the driver see docs");
  CHECK_FALSE(back->counters.dram_pct.has_value());
  CHECK(back->bottleneck.empty());
}

TEST_CASE("the table is created with its header, appended to, and read back, and a damaged line is skipped", "[counters][results]") {
  test::TempDir dir;
  const std::string path = counters_table_path(dir.path.string());
  CHECK(read_counters_table(path).empty());
  REQUIRE(append_counters(path, memory_bound_row(1)).ok());
  REQUIRE(append_counters(path, memory_bound_row(2)).ok());
  {
    std::ofstream(path, std::ios::app) << "garbage\n";
  }
  REQUIRE(append_counters(path, memory_bound_row(4)).ok());
  auto rows = read_counters_table(path);
  REQUIRE(rows.size() == 3);
  CHECK(rows[2].experiment == 4);
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  CHECK(first == counters_header());
}
