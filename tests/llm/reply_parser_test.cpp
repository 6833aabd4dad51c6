#include <catch2/catch.hpp>

#include "llm/reply_parser.hpp"

using namespace ak;

TEST_CASE("the description and the last complete cuda block are taken", "[llm]") {
  std::string reply =
      "Description: vectorize loads to 16 bytes\n\nFirst a sketch:\n```cuda\nold\n```\nNow the file:\n"
      "```cuda\ntemplate <typename T> __global__ void rmsnorm_kernel() {}\n```\nExpect 20% less time.\n";
  auto e = parse_reply(reply, false, "rmsnorm_kernel");
  REQUIRE(e.ok());
  CHECK(e->description == "vectorize loads to 16 bytes");
  CHECK(e->source == "template <typename T> __global__ void rmsnorm_kernel() {}\n");
}

TEST_CASE("answers that cannot be used say why", "[llm]") {
  CHECK_THAT(parse_reply("I would vectorize.", false, "k").error().message, Catch::Contains("no ```cuda code block"));
  CHECK_THAT(parse_reply("x\n```cuda\nvoid k() {\n", false, "k").error().message, Catch::Contains("not closed"));
  CHECK_THAT(parse_reply("x\n```cuda\n```\n", false, "k").error().message, Catch::Contains("empty"));
  CHECK_THAT(parse_reply("x\n```cpp\nvoid other() {}\n```\n", false, "softmax_kernel").error().message,
             Catch::Contains("'softmax_kernel'"));
  CHECK_THAT(parse_reply("x\n```cuda\nk\n```\n", true, "k").error().message, Catch::Contains("cut off"));
}

TEST_CASE("a user type's file with a launch plan is taken without the single entry point", "[llm]") {
  const std::string planned = "x\n```cuda\nextern \"C\" __constant__ char ak_launch[] = \"step a grid(1) block(32);\";\n"
                              "template <typename T> __global__ void a(T* out, int n) {}\n```\n";
  auto e = parse_reply(planned, false, "kb_conv_kernel");
  REQUIRE(e.ok());
  CHECK_THAT(e->source, Catch::Contains("ak_launch"));
  CHECK_THAT(parse_reply("x\n```cuda\nvoid other() {}\n```\n", false, "kb_conv_kernel").error().message,
             Catch::Contains("nor an ak_launch plan"));
}

TEST_CASE("a block in another language is not taken for the kernel file", "[llm]") {
  auto e = parse_reply("d\n```cuda\nvoid k1() {}\n```\n```python\nk = 1\n```\n", false, "k1");
  REQUIRE(e.ok());
  CHECK(e->source == "void k1() {}\n");
}

TEST_CASE("a structured reply gives the hypothesis, the predicted time, the scratchpad and a structure to see", "[llm][plan]") {
  const std::string reply =
      "Let me analyze the ledger first. The loads are 4 bytes wide.\n\n"
      "**Hypothesis:** 16-byte loads cut the load instructions 4x; memory-bound, so ~8% less time\n"
      "Predicted: 98.5 us\n"
      "Scratchpad:\n"
      "avoid: AK_THREADS above 512 (spills, #4)\n"
      "try: row in registers next\n"
      "\n"
      "Show: row_in_registers\n"
      "````cuda\n// a comment with ``` inside\ntemplate <typename T> __global__ void rmsnorm_kernel() {}\n````\n";
  auto e = parse_reply(reply, false, "rmsnorm_kernel");
  REQUIRE(e.ok());
  CHECK(e->description == "16-byte loads cut the load instructions 4x; memory-bound, so ~8% less time");
  CHECK(e->predicted_us == Approx(98.5));
  REQUIRE(e->scratchpad);
  CHECK(*e->scratchpad == "avoid: AK_THREADS above 512 (spills, #4)\ntry: row in registers next");
  CHECK(e->show == "row_in_registers");
  CHECK(e->source == "// a comment with ``` inside\ntemplate <typename T> __global__ void rmsnorm_kernel() {}\n");
}

TEST_CASE("without a hypothesis line the description is never the model thinking aloud", "[llm][plan]") {
  auto e = parse_reply("Let me analyze the kernel.\nI'll vectorize.\nUse 16-byte loads.\n```cuda\nvoid k() {}\n```\n", false, "k");
  REQUIRE(e.ok());
  CHECK(e->description == "Use 16-byte loads.");
  CHECK(e->predicted_us == 0);
  CHECK_FALSE(e->scratchpad);
  CHECK(e->show.empty());
}

TEST_CASE("a predicted time is read in us, ms or ns, and nonsense is no prediction", "[llm][plan]") {
  auto at = [](const std::string& line) {
    return parse_reply("Hypothesis: x\n" + line + "\n```cuda\nvoid k() {}\n```\n", false, "k")->predicted_us;
  };
  CHECK(at("Predicted: 12.5 us") == Approx(12.5));
  CHECK(at("Predicted: ~12.5µs (from 14)") == Approx(12.5));
  CHECK(at("Predicted: 0.0125 ms") == Approx(12.5));
  CHECK(at("Predicted: 12500 ns") == Approx(12.5));
  CHECK(at("Predicted: faster") == 0);
  CHECK(at("Prediction: 40 us") == Approx(40));
}

TEST_CASE("a block fenced with more backticks closes only on as many", "[llm]") {
  auto e = parse_reply("Hypothesis: x\n`````cuda\nvoid k() {}\n```\nstill code\n`````\n", false, "k");
  REQUIRE(e.ok());
  CHECK(e->source == "void k() {}\n```\nstill code\n");
}
