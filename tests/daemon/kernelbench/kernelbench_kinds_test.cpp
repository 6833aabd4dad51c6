// The launch-plan examples of examples/kernelbench/: eleven problems of the kinds a single entry
// point under a grid rule cannot launch (convolutions, pooling, norms over a middle axis, a scan,
// an argmax, a loss to a scalar, batched and reduced GEMMs, a whole MLP). Every hand-written spec
// under examples/kernelbench/specs/ is read by the spec reader (shapes written as expressions,
// int64 and scalar outputs, the new kinds); every kernel file keeps the contract, compiles with
// NVRTC through the harness's request (each step of its ak_launch in each dtype) and its plan holds
// at every shape its spec declares. (tests/daemon/kernelbench/kernel_plans_test.py checks each
// step's parameter list against its spec, which no compiled module shows.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

#include "harness/compile/candidate_compile.hpp"
#include "harness/compile/kernel_contract.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "harness/module/planned_launch.hpp"
#include "kernels_cuda/launch_plan.hpp"
#include "kernels_cuda/user_type.hpp"
#include "tests/support.hpp"

using namespace ak;
namespace fs = std::filesystem;

namespace {

const std::string kExamples = std::string(AK_SOURCE_DIR) + "/examples/kernelbench/";

const std::vector<std::string> kProblems{"conv2d_bias", "conv_transpose2d", "maxpool2d",      "group_norm",
                                         "rms_norm_channels", "cumsum",    "argmax",         "mse_loss",
                                         "batched_matmul",    "linear_rowmax", "mlp"};
const char* kSuffixes[] = {"", ".wrong", ".cheating"};

UserTypeSpec example_spec(const std::string& problem) {
  const std::string path = kExamples + "specs/kb_" + problem + ".toml";
  auto spec = load_user_type(path);
  INFO(path);
  INFO((spec.ok() ? std::string() : spec.error().message));
  REQUIRE(spec.ok());
  return *spec;
}

}  // namespace

TEST_CASE("every launch-plan example keeps the contract and compiles with NVRTC, each step in each dtype of its spec",
          "[kernelbench][nvrtc]") {
  for (const std::string& problem : kProblems) {
    const UserTypeSpec spec = example_spec(problem);
    for (const char* suffix : kSuffixes) {
      const std::string file = problem + suffix + ".cu";
      INFO(file);
      const std::string source = test::read_file(kExamples + "kernels/" + file);
      KernelSpec ks = user_kernel_spec(spec);
      REQUIRE(ks.launch_plans);
      CHECK(contract_violations(source, ks) == std::vector<std::string>{});
      auto steps = launch_step_names(source);
      REQUIRE(steps.ok());
      REQUIRE_FALSE(steps->empty());
      // The honest files are written for every dtype, whatever their spec times.
      if (std::string(suffix).empty()) ks.dtypes = {DType::F32, DType::F16, DType::BF16};
      auto out = nvrtc_compile(candidate_request(ks, source, file, "sm_90a"));
      REQUIRE(out.ok());
      INFO(out->log);
      CHECK(out->ok);
      CHECK(out->functions.size() == steps->size() * ks.dtypes.size());
      CHECK(compiled_step_names(*out) == *steps);
    }
  }
}

TEST_CASE("every launch-plan example's plan holds at every shape and dtype its spec declares", "[kernelbench]") {
  for (const std::string& problem : kProblems) {
    const UserTypeSpec spec = example_spec(problem);
    for (const char* suffix : kSuffixes) {
      const std::string file = problem + suffix + ".cu";
      INFO(file);
      auto text = launch_plan_source_text(test::read_file(kExamples + "kernels/" + file));
      REQUIRE(text.ok());
      REQUIRE(text->has_value());
      auto plan = parse_launch_plan(**text);
      INFO((plan.ok() ? std::string() : plan.error().message));
      REQUIRE(plan.ok());
      const Status checked = check_launch_plan(*plan, spec, LaunchLimits{});
      INFO((checked.ok() ? std::string() : checked.error().message));
      CHECK(checked.ok());
    }
  }
}

TEST_CASE("a plan that outgrows a limit at one of the spec's declared shapes is refused, naming the step",
          "[kernelbench]") {
  const UserTypeSpec spec = example_spec("cumsum");
  // Chunks of 2 in grid.y: the edge shape's row of 262145 needs 131073 blocks there, past 65535.
  auto plan = parse_launch_plan("let chunks = ceil_div(length, 2);"
                                "scratch chunk_sums int64[batch_size * chunks];"
                                "step scan_chunk_sums grid(batch_size, chunks) block(256);");
  REQUIRE(plan.ok());
  const Status checked = check_launch_plan(*plan, spec, LaunchLimits{});
  REQUIRE_FALSE(checked.ok());
  CHECK_THAT(checked.error().message, Catch::Contains("scan_chunk_sums"));
}

TEST_CASE("every hand-written example spec is read: shapes as expressions, int64 and scalar outputs, the new kinds",
          "[kernelbench][user_type]") {
  // The first output's sizes at the timed shape, as each module returns it.
  const std::map<std::string, Shape> timed_output{
      {"conv2d_bias", {16, 64, 128, 128}}, {"conv_transpose2d", {16, 32, 128, 128}}, {"maxpool2d", {32, 64, 64, 64}},
      {"group_norm", {16, 64, 128, 128}},  {"rms_norm_channels", {16, 64, 32768}},  {"cumsum", {128, 65536}},
      {"argmax", {32, 1024}},              {"mse_loss", {}},                         {"batched_matmul", {32, 512, 512}},
      {"linear_rowmax", {1024, 1}},        {"mlp", {1024, 512}}};
  size_t specs = 0;
  for (auto& entry : fs::directory_iterator(kExamples + "specs")) specs += entry.path().extension() == ".toml";
  CHECK(specs == kProblems.size());
  for (const std::string& problem : kProblems) {
    const std::string path = kExamples + "specs/kb_" + problem + ".toml";
    INFO(path);
    auto spec = load_user_type(path);
    INFO((spec.ok() ? std::string() : spec.error().message));
    REQUIRE(spec.ok());
    CHECK(spec->name == "kb_" + problem);
    const auto& kinds = user_type_kinds();
    CHECK(std::count(kinds.begin(), kinds.end(), spec->kind) == 1);
    CHECK(spec->reference_source.find("class Model(nn.Module)") != std::string::npos);
    const auto out = std::find_if(spec->tensors.begin(), spec->tensors.end(),
                                  [](const UserTensor& t) { return t.role == TensorRole::Output; });
    REQUIRE(out != spec->tensors.end());
    CHECK(spec->sizes(*out, spec->bench) == timed_output.at(problem));
    CHECK(spec->numel(*out, spec->bench) >= 1);
    CHECK(out->int64 == (problem == "argmax"));
  }
}

TEST_CASE("a shape expression is evaluated at each stage shape, with the spec's integer [fixed] globals",
          "[kernelbench][user_type]") {
  auto conv = load_user_type(kExamples + "specs/kb_conv2d_bias.toml");
  INFO((conv.ok() ? std::string() : conv.error().message));
  REQUIRE(conv.ok());
  const UserTensor& out = conv->tensors.back();
  // (height + 2 * padding - kernel_size) / stride + 1 with padding = stride = 1.
  CHECK(conv->sizes(out, {1, 1, 1, 1, 1, 3}) == Shape{1, 1, 1, 1});
  CHECK(conv->sizes(out, {2, 8, 5, 31, 29, 5}) == Shape{2, 5, 29, 27});
  auto pool = load_user_type(kExamples + "specs/kb_maxpool2d.toml");
  REQUIRE(pool.ok());
  // (height + 2 - 3) / 2 + 1 floors: 33 -> 17, 47 -> 24.
  CHECK(pool->sizes(pool->tensors.back(), {3, 5, 33, 47}) == Shape{3, 5, 17, 24});
  auto up = load_user_type(kExamples + "specs/kb_conv_transpose2d.toml");
  REQUIRE(up.ok());
  // The weight's kernel_size is a [fixed] global, not a dim.
  CHECK(up->sizes(up->tensors[1], {1, 3, 5, 7, 9}) == Shape{3, 5, 4, 4});
  CHECK(up->sizes(up->tensors.back(), {1, 3, 5, 7, 9}) == Shape{1, 5, 14, 18});
}
