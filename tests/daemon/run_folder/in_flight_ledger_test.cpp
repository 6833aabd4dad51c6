#include <catch2/catch.hpp>

#include "common/atomic_write.hpp"
#include "daemon/run_folder/in_flight_ledger.hpp"
#include "tests/support.hpp"

using namespace ak;

TEST_CASE("the in-flight ledger survives a restart and forgets what was recorded", "[ledger]") {
  test::TempDir dir;
  const std::string file = (dir.path / "in_flight.json").string();
  {
    InFlightLedger l(file);
    REQUIRE(l.load().ok());   // no file yet: nothing in flight
    CHECK(l.entries().empty());
    REQUIRE(l.add({7, "rmsnorm", 0, "", 0, 0, 1}).ok());
    REQUIRE(l.add({8, "softmax", 1, "tier 1: AK_THREADS 256 -> 128", 0, 0, 2}).ok());
    REQUIRE(l.update({7, "rmsnorm", 0, "the LLM's edit", 1200, 0.02, 1}).ok());
    REQUIRE(l.remove(8).ok());
  }
  InFlightLedger again(file);
  REQUIRE(again.load().ok());
  REQUIRE(again.entries().size() == 1);
  CHECK(again.entries()[0].description == "the LLM's edit");
  CHECK(again.entries()[0].tokens == 1200);
  CHECK(again.highest() == 7);
  REQUIRE(write_file_atomic(file, "not json").ok());
  auto bad = again.load();
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("move it aside"));
}
