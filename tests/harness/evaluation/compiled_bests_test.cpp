// The bests a worker keeps compiled: found again by type, arch and source, whichever kernels came
// between; bounded; a failed compile kept as nothing.
#include "harness/evaluation/compiled_bests.hpp"

#include <catch2/catch.hpp>

namespace ak {
namespace {

struct CountingCompiler {
  int calls = 0;
  std::function<Result<CompileOutput>()> of(const std::string& log) {
    return [this, log]() -> Result<CompileOutput> {
      ++calls;
      CompileOutput out;
      out.ok = true;
      out.log = log;
      return out;
    };
  }
};

}  // namespace

TEST_CASE("four kernels of one type judged in turn compile each best once", "[harness][compiled-bests]") {
  CompiledBests bests;
  CountingCompiler c;
  for (int round = 0; round < 3; ++round)
    for (int k = 0; k < 4; ++k) {
      const std::string source = "// rmsnorm best of kernel " + std::to_string(k);
      auto out = bests.find("rmsnorm", "sm_90a", source, c.of(source));
      REQUIRE(out);
      CHECK((*out)->log == source);   // each kernel's own best, never another's
    }
  CHECK(c.calls == 4);
  CHECK(bests.size() == 4);
}

TEST_CASE("the same text of another type or arch is another entry", "[harness][compiled-bests]") {
  CompiledBests bests;
  CountingCompiler c;
  REQUIRE(bests.find("softmax", "sm_90a", "same text", c.of("a")));
  REQUIRE(bests.find("layernorm", "sm_90a", "same text", c.of("b")));
  auto other_arch = bests.find("softmax", "sm_100a", "same text", c.of("c"));
  REQUIRE(other_arch);
  CHECK((*other_arch)->log == "c");
  CHECK(c.calls == 3);
}

TEST_CASE("a compile that fails is returned and not kept: the next find compiles again", "[harness][compiled-bests]") {
  CompiledBests bests;
  int calls = 0;
  auto failing = [&]() -> Result<CompileOutput> {
    ++calls;
    return error("the current best does not compile any more: no");
  };
  auto first = bests.find("softmax", "sm_90a", "broken", failing);
  REQUIRE_FALSE(first);
  CHECK_THAT(first.error().message, Catch::Contains("does not compile any more"));
  CHECK_FALSE(bests.find("softmax", "sm_90a", "broken", failing));
  CHECK(calls == 2);
  CHECK(bests.size() == 0);
}

TEST_CASE("past its bound the least recently found best goes first", "[harness][compiled-bests]") {
  CompiledBests bests;
  CountingCompiler c;
  const size_t n = CompiledBests::kMaxKept;
  for (size_t i = 0; i < n; ++i) REQUIRE(bests.find("reduce", "sm_90a", "file " + std::to_string(i), c.of("")));
  REQUIRE(bests.find("reduce", "sm_90a", "file 0", c.of("")));            // found again: the most recent now
  REQUIRE(bests.find("reduce", "sm_90a", "file new", c.of("")));          // pushes out file 1, the oldest
  CHECK(bests.size() == n);
  const int before = c.calls;
  REQUIRE(bests.find("reduce", "sm_90a", "file 0", c.of("")));
  CHECK(c.calls == before);                                                 // still kept
  REQUIRE(bests.find("reduce", "sm_90a", "file 1", c.of("")));
  CHECK(c.calls == before + 1);                                             // compiled again
}

}  // namespace ak
