// What every type's stages share, tested without a GPU: how a stage failure fills the verdict.
#include <catch2/catch.hpp>

#include "common/result.hpp"
#include "harness/judging/stages.hpp"

using namespace ak;

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
