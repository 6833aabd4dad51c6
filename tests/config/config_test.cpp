#include <catch2/catch.hpp>

#include "config/config.hpp"
#include "kernels_cuda/spec.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {
const char* kMinimal = R"(
[[kernel]]
type = "rmsnorm"
)";

std::string error_of(const std::string& text) {
  auto c = parse_config(text, "/cfg/test.toml");
  REQUIRE_FALSE(c.ok());
  return c.error().message;
}
}  // namespace

TEST_CASE("a minimal config gets DESIGN.md's defaults", "[config]") {
  auto c = parse_config(kMinimal, "/cfg/test.toml");
  REQUIRE(c.ok());
  CHECK(c->llm.provider == ProviderKind::Builtin);
  CHECK(c->convergence.max_consecutive_reverts == 5);
  CHECK(c->convergence.peak_fraction == Approx(0.90));
  CHECK(c->convergence.max_hours_per_kernel == Approx(2.0));
  CHECK(c->convergence.target_speedup == Approx(2.0));
  CHECK(c->convergence.keep_threshold == Approx(0.01));
  REQUIRE(c->kernels.size() == 1);
  CHECK(c->kernels[0].shape == Shape{8192, 8192});  // the type's benchmark shape
  CHECK(c->kernels[0].dtype == "fp16");
  CHECK(c->run_dir() == "/cfg/runs/autokernel");
}

TEST_CASE("the shipped configs are valid", "[config]") {
  for (const char* f : {"config/example.toml", "config/quickstart.toml", "config/tensor-cores.toml",
                        "config/scripted-llm.toml", "config/cheating-llm.toml"}) {
    auto c = load_config(std::string(AK_SOURCE_DIR) + "/" + f);
    INFO(f);
    REQUIRE(c.ok());
    const std::string name = f;
    CHECK(c->kernels.size() == (name == "config/tensor-cores.toml" ? 3u : name.find("llm") != std::string::npos ? 1u : 2u));
  }
}

TEST_CASE("a misspelt key is named with its file and line", "[config]") {
  std::string e = error_of("[convergence]\nmax_consecutive_revert = 3\n[[kernel]]\ntype = \"softmax\"\n");
  CHECK_THAT(e, Catch::Contains("/cfg/test.toml:2"));
  CHECK_THAT(e, Catch::Contains("unknown key 'convergence.max_consecutive_revert'"));
  CHECK_THAT(e, Catch::Contains("max_consecutive_reverts"));  // the known keys are listed
}

TEST_CASE("a value of the wrong type names the key and the expected type", "[config]") {
  std::string e = error_of("[gpu]\ndevice = \"zero\"\n[[kernel]]\ntype = \"softmax\"\n");
  CHECK_THAT(e, Catch::Contains("test.toml:2: gpu.device is a string: expected an integer"));
}

TEST_CASE("an out-of-range value names the value and the range", "[config]") {
  std::string e = error_of("[convergence]\npeak_fraction = 1.5\n[[kernel]]\ntype = \"softmax\"\n");
  CHECK_THAT(e, Catch::Contains("convergence.peak_fraction = 1.5: expected greater than 0 and at most 1"));
}

TEST_CASE("worker_env takes variable names and refuses anything else", "[config]") {
  auto c = parse_config("[harness]\nworker_env = [\"HTTPS_PROXY\", \"MY_LIB_PATH\"]\n[[kernel]]\ntype = \"softmax\"\n", "/cfg/test.toml");
  REQUIRE(c.ok());
  CHECK(c->harness.worker_env == std::vector<std::string>{"HTTPS_PROXY", "MY_LIB_PATH"});
  std::string e = error_of("[harness]\nworker_env = [\"A=B\"]\n[[kernel]]\ntype = \"softmax\"\n");
  CHECK_THAT(e, Catch::Contains("harness.worker_env = \"A=B\": expected an array of variable names"));
}

TEST_CASE("an unknown kernel type lists the known ones", "[config]") {
  std::string e = error_of("[[kernel]]\ntype = \"convolution\"\n");
  CHECK_THAT(e, Catch::Contains("kernel.type = \"convolution\": expected one of \"cross_entropy\", \"flash_attention\", \"fused_mlp\", \"layernorm\", \"matmul\", \"reduce\", \"rmsnorm\", \"rotary_embedding\", \"softmax\""));
}

TEST_CASE("a shape with the wrong number of dimensions is refused", "[config]") {
  std::string e = error_of("[[kernel]]\ntype = \"rmsnorm\"\nshape = [4, 4, 4]\n");
  CHECK_THAT(e, Catch::Contains("expected 2 dimensions for rmsnorm (rows, cols)"));
}

TEST_CASE("weights that add up to more than 1 are refused", "[config]") {
  std::string e = error_of("[[kernel]]\ntype = \"rmsnorm\"\nweight = 0.7\n[[kernel]]\ntype = \"softmax\"\nweight = 0.6\n");
  CHECK_THAT(e, Catch::Contains("weights add up to 1.3"));
}

TEST_CASE("a config without kernels says how to add one", "[config]") {
  CHECK_THAT(error_of("[run]\nname = \"x\"\n"), Catch::Contains("no [[kernel]] entries"));
}

TEST_CASE("invalid TOML names the line", "[config]") {
  CHECK_THAT(error_of("[run\nname = 1\n"), Catch::Contains("test.toml:1: not valid TOML"));
}

TEST_CASE("a secret written into the config never appears in the error", "[config]") {
  std::string e = error_of("[llm]\napi_key = \"sk-SECRET-123\"\n[[kernel]]\ntype = \"rmsnorm\"\n");
  CHECK_THAT(e, Catch::Contains("unknown key 'llm.api_key'"));
  CHECK_THAT(e, !Catch::Contains("SECRET"));
}

TEST_CASE("a remote provider needs a model and a key source", "[config]") {
  std::string e = error_of("[llm]\nprovider = \"anthropic\"\n[[kernel]]\ntype = \"rmsnorm\"\n");
  CHECK_THAT(e, Catch::Contains("llm.model is missing"));
  CHECK_THAT(e, Catch::Contains("needs api_key_env or api_key_file"));
  auto ok = parse_config("[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n" + std::string(kMinimal), "t.toml");
  CHECK(ok.ok());
}

TEST_CASE("a missing config file says so", "[config]") {
  auto c = load_config("/nonexistent/autokernel.toml");
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.error().message, Catch::Contains("/nonexistent/autokernel.toml: no such file"));
}

TEST_CASE("[gpu] devices takes a list of indices or all, and says what is wrong otherwise", "[config][parallel]") {
  auto two = parse_config(std::string("[gpu]\ndevices = [0, 1]\n") + kMinimal, "/cfg/test.toml");
  REQUIRE(two.ok());
  CHECK(two->gpu.devices == std::vector<int>{0, 1});
  auto all = parse_config(std::string("[gpu]\ndevices = \"all\"\n[llm]\nconcurrency = 4\n") + kMinimal, "/cfg/test.toml");
  REQUIRE(all.ok());
  CHECK(all->gpu.all_devices);
  CHECK(all->llm.concurrency == 4);
  CHECK_THAT(error_of(std::string("[gpu]\ndevices = [0, 0]\n") + kMinimal), Catch::Contains("gpu.devices = 0: expected \"all\" or a list of distinct"));
  CHECK_THAT(error_of(std::string("[gpu]\ndevices = \"some\"\n") + kMinimal), Catch::Contains("/cfg/test.toml:2"));
  CHECK_THAT(error_of(std::string("[gpu]\nmixed_models = \"average\"\n") + kMinimal), Catch::Contains("\"per-kernel\""));
}
