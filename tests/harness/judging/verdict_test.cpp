#include <catch2/catch.hpp>

#include <cmath>

#include "harness/evaluation/evaluate.hpp"
#include "harness/judging/verdict.hpp"

using namespace ak;

TEST_CASE("a verdict survives the trip through JSON", "[verdict]") {
  Verdict v;
  v.correctness = Correctness::Fail;
  v.message = "shape sweep: wrong output";
  v.failed_stage = "shape sweep";
  v.failed_shape = "100x3000";
  v.worst_index = 2999;
  v.worst_got = 0.5;
  v.worst_expected = 0.25;
  v.seed = 1234567890123ull;
  v.stages = {{"compile", true, 0.2, "32 registers"}, {"shape sweep", false, 0.4, "wrong"}};
  v.timing = Timing{100, 91.5, 90, 99, 91, 93, 92.5};
  Verdict back = nlohmann::json(v).get<Verdict>();
  CHECK(back.correctness == Correctness::Fail);
  CHECK(back.message == v.message);
  CHECK(back.worst_index == 2999);
  CHECK(back.seed == v.seed);
  REQUIRE(back.stages.size() == 2);
  CHECK(back.stages[1].name == "shape sweep");
  REQUIRE(back.timing);
  CHECK(back.timing->p90_us == 93);
}

TEST_CASE("a NaN or infinite worst element survives JSON, which has neither", "[verdict]") {
  Verdict v;
  v.worst_got = std::nan("");
  v.worst_expected = -INFINITY;
  Verdict back = nlohmann::json::parse(nlohmann::json(v).dump()).get<Verdict>();
  CHECK(std::isnan(back.worst_got));
  CHECK(back.worst_expected == -INFINITY);
}

TEST_CASE("correctness names are docs/design.md's", "[verdict]") {
  for (auto c : {Correctness::Pass, Correctness::Fail, Correctness::CompileError, Correctness::Timeout,
                 Correctness::Crash, Correctness::Suspect})
    CHECK(parse_correctness(correctness_name(c)) == c);
  CHECK(std::string(correctness_name(Correctness::CompileError)) == "COMPILE_ERROR");
  CHECK_FALSE(parse_correctness("OK"));
}

TEST_CASE("an evaluation request survives the trip through JSON", "[verdict]") {
  EvalRequest r;
  r.kernel_type = "softmax";
  r.source = "x";
  r.shape = {4, 4};
  r.baseline_us = 95.9;
  EvalRequest back = nlohmann::json(r).get<EvalRequest>();
  CHECK(back.shape == Shape{4, 4});
  CHECK(back.baseline_us == 95.9);
}
