// The parts of the five stages that need no GPU: how a sampled validation picks its rows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "harness/judging/stages.hpp"

using namespace ak;

TEST_CASE("sampled validation takes every row of a small output", "[stages]") {
  CHECK(pick_sample_rows(5, 64, 1) == std::vector<int32_t>{0, 1, 2, 3, 4});
}

TEST_CASE("sampled rows are distinct and sorted, always hold the first and last, and change with the seed", "[stages]") {
  auto a = pick_sample_rows(524288, 256, 7), b = pick_sample_rows(524288, 256, 8);
  REQUIRE(a.size() == 256);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(std::set<int32_t>(a.begin(), a.end()).size() == 256);
  CHECK(a.front() == 0);
  CHECK(a.back() == 524287);
  CHECK(a != b);
  CHECK(a == pick_sample_rows(524288, 256, 7));
}

TEST_CASE("a stage failure the harness caused makes the verdict the harness's, never the candidate's", "[stages][blame]") {
  StageFailure f;
  f.message = "allocating 100 MiB on the GPU failed: CUDA_ERROR_OUT_OF_MEMORY";
  Verdict candidate;
  record_failure(f, "shape sweep", candidate);
  CHECK_FALSE(candidate.harness_error);   // a failure of the candidate's own
  f.harness = true;
  Verdict harness;
  record_failure(f, "shape sweep", harness);
  CHECK(harness.harness_error);
  CHECK(harness.failed_stage == "shape sweep");
}

TEST_CASE("an error passed on with a prefix stays the harness's", "[stages][blame]") {
  Error e = error("cuMemAlloc failed");
  e.harness = true;
  const Error passed = error("the reference process failed to draw the inputs: ", e);
  CHECK(passed.harness);
  CHECK(passed.message == "the reference process failed to draw the inputs: cuMemAlloc failed");
  CHECK_FALSE(error("the reference process failed: ", error("a plain one")).harness);
}
