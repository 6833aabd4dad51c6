#include <catch2/catch.hpp>

#include "daemon/proposers/failure_feedback.hpp"

using namespace ak;

namespace {

PastExperiment failed(long long n, const std::string& correctness, const std::string& source, const std::string& failure) {
  PastExperiment e;
  e.experiment = n;
  e.description = "idea " + std::to_string(n);
  e.correctness = correctness;
  e.source = source;
  e.failure = failure;
  return e;
}

}  // namespace

TEST_CASE("a failure shows its file as a diff against the best, with the compile log beside it", "[feedback]") {
  const std::string best = "a\nb\nconst float inv = 1;\nc\n";
  PastExperiment e = failed(5, "COMPILE_ERROR", "a\nb\nconst flaot inv = 1;\nc\n", "compile: 1 error");
  e.compile_log = "softmax.cu(3): error: identifier \"flaot\" is undefined";
  const auto out = failure_feedback({e}, best);
  REQUIRE(out.size() == 1);
  CHECK(out[0] ==
        "#5 COMPILE_ERROR | idea: \"idea 5\"\n"
        "Its file against the current best:\n"
        "```diff\n--- best.cu\n+++ #5.cu\n@@ -1,4 +1,4 @@\n a\n b\n-const float inv = 1;\n+const flaot inv = 1;\n c\n```\n"
        "What the harness said:\n"
        "```text\ncompile: 1 error\nsoftmax.cu(3): error: identifier \"flaot\" is undefined\n```\n");
}

TEST_CASE("only the last few failures are shown, passing rows and the daemon's events never", "[feedback]") {
  std::vector<PastExperiment> h;
  for (int i = 1; i <= 6; ++i) h.push_back(failed(i, "FAIL", "x" + std::to_string(i) + "\n", "wrong"));
  PastExperiment pass = failed(7, "PASS", "fast\n", "");
  PastExperiment event = failed(8, "HARNESS_ERROR", "h\n", "the harness");
  h.push_back(pass);
  h.push_back(event);
  const auto out = failure_feedback(h, "best\n");
  REQUIRE(out.size() == kFailuresShown);
  CHECK_THAT(out.front(), Catch::StartsWith("#4 FAIL"));
  CHECK_THAT(out.back(), Catch::StartsWith("#6 FAIL"));
}

TEST_CASE("before there is a best, the failed first file is shown whole", "[feedback][user_type]") {
  const auto out = failure_feedback({failed(1, "FAIL", "__global__ void k() {}\n", "shape sweep: wrong output")}, "");
  REQUIRE(out.size() == 1);
  CHECK_THAT(out[0], Catch::Contains("The file that failed:\n```cuda\n__global__ void k() {}\n```\n"));
}

TEST_CASE("a last reply that could not be used is said, with why", "[feedback]") {
  PastExperiment none = failed(9, "NO_PROPOSAL", "", "the reply was cut off at the output token limit");
  const auto out = failure_feedback({none}, "best\n");
  REQUIRE(out.size() == 1);
  CHECK(out[0] == "#9 your reply could not be used | why: \"the reply was cut off at the output token limit\"");
}
