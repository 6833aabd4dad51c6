#include <catch2/catch.hpp>

#include "llm/prompt_template.hpp"

using namespace ak;

TEST_CASE("placeholders are filled, and a missing value names the placeholder and the template", "[prompts]") {
  auto r = render("t.txt", "GPU {{gpu}}, {{gpu}} again; {{n}} runs", {{"gpu", "H100"}, {"n", "3"}});
  REQUIRE(r.ok());
  CHECK(*r == "GPU H100, H100 again; 3 runs");
  auto bad = render("t.txt", "shape {{shape}}", {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "the prompt template t.txt uses {{shape}}, which has no value");
}

TEST_CASE("the prompts of prompts/ are embedded in the binary", "[prompts]") {
  for (const char* name : {"system.txt", "experiment.txt", "kernel-contract.txt", "notes/rmsnorm.txt", "notes/softmax.txt"}) {
    INFO(name);
    REQUIRE(prompt_text(name) != nullptr);
    CHECK(prompt_text(name)->size() > 100);
  }
  CHECK(prompt_text("nope.txt") == nullptr);
  CHECK_THAT(*prompt_text("system.txt"), Catch::Contains("1. Block sizing") && Catch::Contains("6. Kernel-specific"));
}
