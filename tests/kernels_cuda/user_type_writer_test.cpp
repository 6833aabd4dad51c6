// The spec writer against the reader: what user_type_toml() writes, parse_user_type() reads back
// as the same fields and values, for every kind of field a spec holds.
#include <catch2/catch.hpp>

#include "kernels_cuda/spec_expression.hpp"
#include "kernels_cuda/user_type_writer.hpp"
#include "tests/kernels_cuda/user_type_fields.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"

using namespace ak;

namespace {

SizeTerm dim(const std::string& name) { return SizeTerm{name, 0, nullptr}; }
SizeTerm literal(int64_t v) { return SizeTerm{"", v, nullptr}; }
SizeTerm expression(const std::string& text) {
  auto e = SpecExpression::parse(text);
  REQUIRE(e.ok());
  return SizeTerm{"", 0, std::make_shared<const SpecExpression>(std::move(*e))};
}

UserTensor tensor(const std::string& name, TensorRole role, std::vector<SizeTerm> shape, bool int64 = false) {
  UserTensor t;
  t.name = name;
  t.role = role;
  t.shape = std::move(shape);
  t.int64 = int64;
  return t;
}

/// A spec with every kind of field set: expressions in shapes and bounds, literals, a scalar,
/// several inputs and outputs of both types, every dtype, tolerances, and [fixed] globals of each
/// kind ([fixed] in the order the reader keeps: by name).
UserTypeSpec every_field() {
  UserTypeSpec s;
  s.name = "conv_every_field";
  s.summary = "every field: \"quoted\", a tab\tand a line\nbreak, ünïcode";
  s.reference = "refs/conv every field.py";
  s.starter = "conv.cu";
  s.kind = "convolution";
  s.grid = GridRule::Tiles;
  s.dtypes = {DType::F16, DType::BF16, DType::F32};
  s.metric = Metric::TFLOPS;
  s.bytes = "elem * (batch_size * channels * height * width) + 4";
  s.flops = "2 * batch_size * channels * channels * height * width * 9";
  s.dims = {"batch_size", "channels", "height", "width"};
  s.bench = {8, 64, 224, 224};
  s.smoke = {2, 8, 16, 16};
  s.sweep = {{4, 16, 33, 33}, {1, 8, 65, 17}};
  s.stability = {4, 16, 33, 33};
  s.determinism = {1, 8, 65, 17};
  s.edge = {{1, 8, 5, 5}, {3, 8, 7, 9}};
  s.fixed = {{"axis", "-1"}, {"kernel_size", "3"}, {"mode", R"("mean\n\"x\"")"}, {"padding", "1"},
             {"scale", "0.5"}, {"stride", "2"}, {"training", "False"}, {"verbose", "True"}};
  s.tolerance = {{DType::F16, 0.01}, {DType::F32, 1e-05}};
  UserTensor x = tensor("x", TensorRole::Input, {dim("batch_size"), dim("channels"), dim("height"), dim("width")});
  x.least = -1.5;
  x.most = 2.25;
  UserTensor labels = tensor("labels", TensorRole::Input, {dim("batch_size")}, true);
  labels.low = literal(0);
  labels.high = dim("channels");
  UserTensor offsets = tensor("offsets", TensorRole::Input, {expression("(height + 1) / 2")}, true);
  offsets.low = literal(-3);
  offsets.high = expression("kernel_size * 2");
  const SizeTerm out_h = expression("(height + 2 * padding - kernel_size) / stride + 1");
  const SizeTerm out_w = expression("(width + 2 * padding - kernel_size) / stride + 1");
  s.tensors = {x, labels, offsets,
               tensor("weight", TensorRole::Parameter, {dim("channels"), dim("channels"), literal(3), literal(3)}),
               tensor("running_mean", TensorRole::Buffer, {dim("channels")}),
               tensor("out", TensorRole::Output, {dim("batch_size"), dim("channels"), out_h, out_w}),
               tensor("loss", TensorRole::Output, {}),
               tensor("argmax", TensorRole::Output, {dim("batch_size")}, true)};
  return s;
}

UserTypeSpec read_back(const std::string& text) {
  auto s = parse_user_type(text, "types/t.toml");
  INFO(text);
  INFO((s ? "" : s.error().message));
  REQUIRE(s.ok());
  return *s;
}

}  // namespace

TEST_CASE("a spec with every kind of field, written and read back, has the same fields and values", "[user_type]") {
  const UserTypeSpec spec = every_field();
  const std::string text = user_type_toml(spec);
  const UserTypeSpec back = read_back(text);
  test::check_same_user_type(spec, back);
  // Written again, the text is the same: nothing drifts from one round to the next.
  CHECK(user_type_toml(back) == text);
}

TEST_CASE("the test specs read, written and read again keep their fields, defaults made explicit", "[user_type]") {
  for (const char* original : {test::kGeluSpec, test::kLogSoftmaxSpec, test::kMatmulSpec}) {
    const UserTypeSpec first = read_back(original);
    const std::string written = user_type_toml(first);
    const UserTypeSpec second = read_back(written);
    test::check_same_user_type(first, second);
    CHECK(user_type_toml(second) == written);
    // What the reader defaulted is now in the file, not left to the reader again.
    CHECK(written.find("\nstability = ") != std::string::npos);
    CHECK(written.find("\ndtypes = ") != std::string::npos);
    CHECK(written.find("\nmetric = ") != std::string::npos);
  }
}

TEST_CASE("a producer's comments are written where it asks and cannot become keys", "[user_type]") {
  UserTypeComments c;
  c.header = {"Written by a test.", "Second line\nname = \"evil\""};
  c.beside["grid"] = "why this grid\n[fixed]";
  c.below["bench"] = {"what bench holds"};
  c.below["fixed"] = {"a note on the globals"};
  const std::string text = user_type_toml(every_field(), c);
  CHECK(text.rfind("# Written by a test.\n# Second line?name = \"evil\"\n", 0) == 0);
  CHECK(text.find("grid = \"tiles\"   # why this grid?[fixed]\n") != std::string::npos);
  CHECK(text.find("bench = [8, 64, 224, 224]\n# what bench holds\nsmoke = ") != std::string::npos);
  CHECK(text.find("verbose = true\n# a note on the globals\n") != std::string::npos);
  test::check_same_user_type(every_field(), read_back(text));
}

TEST_CASE("a spec without bench, summary, starter, flops, [fixed] or [tolerance] writes none of them", "[user_type]") {
  UserTypeSpec s = read_back(test::kGeluSpec);
  s.bench.clear();
  s.summary.clear();
  const std::string text = user_type_toml(s);
  for (const char* key : {"\nbench =", "summary =", "starter =", "flops =", "[fixed]", "[tolerance]"}) {
    INFO(key);
    CHECK(text.find(key) == std::string::npos);
  }
  // The reader then takes bench from the reference's globals, as for a spec a user wrote without one.
  UserTypeSpec back = read_back(text);
  REQUIRE(with_sources(back, test::kGeluReference, "").ok());
  CHECK(back.bench == Shape{4096, 393216});
}

TEST_CASE("a [fixed] value is written as the TOML value the reader keeps it as", "[user_type]") {
  UserTypeSpec s = read_back(test::kGeluSpec);
  s.fixed = {{"a", "1e-05"}, {"b", "-inf"}, {"c", R"("tab\tquote\"")"}, {"d", "True"}, {"e", "not a number"}};
  const std::string text = user_type_toml(s);
  CHECK(text.find("\na = 1e-05\nb = -inf\nc = \"tab\\tquote\\\"\"\nd = true\ne = \"not a number\"\n") != std::string::npos);
  const UserTypeSpec back = read_back(text);
  REQUIRE(back.fixed.size() == 5);
  CHECK(back.fixed[2].second == R"("tab\tquote\"")");
  CHECK(back.fixed[3].second == "True");
  CHECK(back.fixed[4].second == "\"not a number\"");   // no TOML value reads back as bare text
}

TEST_CASE("a [fixed] name that is no bare key is quoted, so the file stays TOML and the reader names the key", "[user_type]") {
  UserTypeSpec s = read_back(test::kGeluSpec);
  s.fixed = {{"a b\n[x]", "1"}};
  const std::string text = user_type_toml(s);
  CHECK(text.find("\n\"a b\\n[x]\" = 1\n") != std::string::npos);
  auto back = parse_user_type(text, "types/t.toml");
  REQUIRE_FALSE(back.ok());
  CHECK_THAT(back.error().message, Catch::Contains("fixed.a b"));
  CHECK_THAT(back.error().message, !Catch::Contains("not valid TOML"));
}
