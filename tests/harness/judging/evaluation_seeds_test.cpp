// The harness's random choices: independent draws from the CSPRNG, never from a clock.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>

#include "harness/judging/evaluation_seeds.hpp"

using namespace ak;

TEST_CASE("every evaluation draws four independent seeds, none near the clock", "[seeds]") {
  const auto now = [] { return uint64_t(std::chrono::system_clock::now().time_since_epoch().count()); };
  std::set<uint64_t> seen;
  for (int i = 0; i < 50; ++i) {
    const uint64_t before = now();
    auto s = EvaluationSeeds::fresh();
    REQUIRE(s.ok());
    CHECK_FALSE(s->fixed);
    for (uint64_t v : {s->stage_inputs, s->sampled_rows, s->timing_inputs, s->timing_choices}) {
      CHECK(v != 0);
      // The old seed was the wall clock in nanoseconds: a kernel searched a window around it.
      CHECK((v < before - 86400000000000ull || v > before + 86400000000000ull));
      seen.insert(v);
    }
  }
  CHECK(seen.size() == 200);   // no repeats, within an evaluation or across them
}

TEST_CASE("a given seed reproduces every choice, and says it was given", "[seeds]") {
  const EvaluationSeeds a = EvaluationSeeds::from(424242), b = EvaluationSeeds::from(424242);
  CHECK(a.fixed);
  CHECK(a.stage_inputs == 424242);   // a stage failure's recorded seed runs again with --seed
  CHECK(a.sampled_rows == b.sampled_rows);
  CHECK(a.timing_inputs == b.timing_inputs);
  CHECK(a.timing_choices == b.timing_choices);
  CHECK(std::set<uint64_t>{a.stage_inputs, a.sampled_rows, a.timing_inputs, a.timing_choices}.size() == 4);
  CHECK(EvaluationSeeds::from(424243).timing_choices != a.timing_choices);
}
