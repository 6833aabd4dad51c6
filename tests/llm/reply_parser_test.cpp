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
