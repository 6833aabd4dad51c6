#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include "config/config.hpp"
#include "config/llm_key_source.hpp"
#include "kernels_cuda/registry.hpp"
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

TEST_CASE("a minimal config gets docs/design.md's defaults", "[config]") {
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

namespace {
/// A [harness] flag: its default, the other value a config gives it, and the error for a value
/// that is not a boolean.
void check_harness_flag(const std::string& key, bool HarnessConfig::*flag, bool by_default) {
  auto dflt = parse_config("[[kernel]]\ntype = \"softmax\"\n", "/cfg/test.toml");
  REQUIRE(dflt.ok());
  CHECK(dflt->harness.*flag == by_default);
  auto set = parse_config("[harness]\n" + key + " = " + (by_default ? "false" : "true") + "\n[[kernel]]\ntype = \"softmax\"\n",
                          "/cfg/test.toml");
  REQUIRE(set.ok());
  CHECK(set->harness.*flag == !by_default);
  CHECK_THAT(error_of("[harness]\n" + key + " = \"no\"\n[[kernel]]\ntype = \"softmax\"\n"),
             Catch::Contains("harness." + key) && Catch::Contains("true or false"));
}
}  // namespace

TEST_CASE("torch_compile is on by default, can be turned off, and takes only a boolean", "[config]") {
  check_harness_flag("torch_compile", &HarnessConfig::torch_compile, true);
}

TEST_CASE("hardware counters are read by default, can be turned off, and take only a boolean", "[config]") {
  check_harness_flag("counters", &HarnessConfig::counters, true);
  CHECK_THAT(error_of("[harness]\ncounters = 1\n[[kernel]]\ntype = \"softmax\"\n"), Catch::Contains("true or false"));
}

TEST_CASE("counters are left out for a candidate not faster than the best by default, and counters_for_all = true reads them", "[config]") {
  check_harness_flag("counters_for_all", &HarnessConfig::counters_for_all, false);
}

TEST_CASE("the tuner orders its moves by the counters by default, and order_by_counters = false turns that off", "[config]") {
  auto on = parse_config("[[kernel]]\ntype = \"softmax\"\n", "/cfg/test.toml");
  REQUIRE(on.ok());
  CHECK(on->tuner.order_by_counters);
  auto off = parse_config("[tuner]\norder_by_counters = false\n[[kernel]]\ntype = \"softmax\"\n", "/cfg/test.toml");
  REQUIRE(off.ok());
  CHECK_FALSE(off->tuner.order_by_counters);
  CHECK(off->harness.counters);   // the readings are still taken: only the tuner's use of them is off
  CHECK_THAT(error_of("[tuner]\norder_by_counters = \"no\"\n[[kernel]]\ntype = \"softmax\"\n"),
             Catch::Contains("tuner.order_by_counters") && Catch::Contains("true or false"));
  CHECK_THAT(error_of("[tuner]\norder = false\n[[kernel]]\ntype = \"softmax\"\n"),
             Catch::Contains("unknown key 'tuner.order'") && Catch::Contains("order_by_counters"));
}

TEST_CASE("config/tuner-comparison.toml holds every built-in type once, for the builtin tuner ordering by counters", "[config]") {
  auto c = load_config(AK_SOURCE_DIR "/config/tuner-comparison.toml");
  REQUIRE(c.ok());
  std::set<std::string> listed;
  for (auto& k : c->kernels) CHECK(listed.insert(k.type).second);
  std::set<std::string> builtin;
  for (const KernelSpec* s : all_specs()) builtin.insert(s->type);
  CHECK(listed == builtin);
  CHECK(builtin.size() == 10);
  CHECK(c->llm.provider == ProviderKind::Builtin);
  // tests/gpu/tuner-comparison.sh turns it off for the second run by rewriting these lines.
  CHECK(c->tuner.order_by_counters);
  const std::string text = test::read_file(AK_SOURCE_DIR "/config/tuner-comparison.toml");
  for (const char* line : {"\nname = \"tuner-comparison\"\n", "\norder_by_counters = true\n", "\nmax_hours = "}) {
    INFO(line);
    CHECK(text.find(line) != std::string::npos);
  }
}

TEST_CASE("scratch_cap_mib bounds a launch plan's scratch, 16 GiB by default", "[config]") {
  auto dflt = parse_config("[[kernel]]\ntype = \"softmax\"\n", "/cfg/test.toml");
  REQUIRE(dflt.ok());
  CHECK(dflt->harness.scratch_cap_mib == 16384);
  auto set = parse_config("[harness]\nscratch_cap_mib = 512\n[[kernel]]\ntype = \"softmax\"\n", "/cfg/test.toml");
  REQUIRE(set.ok());
  CHECK(set->harness.scratch_cap_mib == 512);
  for (const char* bad : {"0", "-1", "16777217", "1.5", "\"big\""}) {
    INFO(bad);
    CHECK_THAT(error_of(std::string("[harness]\nscratch_cap_mib = ") + bad + "\n[[kernel]]\ntype = \"softmax\"\n"),
               Catch::Contains("harness.scratch_cap_mib"));
  }
}

TEST_CASE("an unknown kernel type lists the known ones", "[config]") {
  std::string e = error_of("[[kernel]]\ntype = \"convolution\"\n");
  CHECK_THAT(e, Catch::Contains("kernel.type = \"convolution\": expected one of \"cross_entropy\", \"flash_attention\", \"fused_mlp\", \"layernorm\", \"matmul\", \"reduce\", \"rmsnorm\", \"rotary_embedding\", \"softmax\""));
}

TEST_CASE("a shape with the wrong number of dimensions is refused", "[config]") {
  std::string e = error_of("[[kernel]]\ntype = \"rmsnorm\"\nshape = [4, 4, 4]\n");
  CHECK_THAT(e, Catch::Contains("expected 2 dimensions for rmsnorm (rows, cols)"));
}

TEST_CASE("a 0 in a shape is refused where the type takes a size, and taken where it takes a flag", "[config]") {
  CHECK_THAT(error_of("[[kernel]]\ntype = \"rmsnorm\"\nshape = [0, 4096]\n"), Catch::Contains("rows is 0"));
  CHECK_THAT(error_of("[[kernel]]\ntype = \"matmul\"\nshape = [4096, 0, 4096, 1]\n"), Catch::Contains("N is 0"));
  auto c = parse_config("[[kernel]]\ntype = \"matmul\"\nshape = [4096, 2048, 1024, 0]\n", "c.toml");
  REQUIRE(c.ok());
  CHECK(c->kernels.at(0).shape == Shape{4096, 2048, 1024, 0});
}

TEST_CASE("weights that add up to more than 1 are refused", "[config]") {
  std::string e = error_of("[[kernel]]\ntype = \"rmsnorm\"\nweight = 0.7\n[[kernel]]\ntype = \"softmax\"\nweight = 0.6\n");
  CHECK_THAT(e, Catch::Contains("weights add up to 1.3"));
}

TEST_CASE("a config without kernels says how to add one", "[config]") {
  CHECK_THAT(error_of("[run]\nname = \"x\"\n"), Catch::Contains("no [[kernel]] entries"));
}

TEST_CASE("config/example.toml shows every key the config reader knows", "[config]") {
  const std::string reader = test::read_file(AK_SOURCE_DIR "/config/config.cpp");
  const std::string example = test::read_file(AK_SOURCE_DIR "/config/example.toml");
  const std::regex key_read(R"re(\b(?:string|integer|number|names|devices|take)\("([a-z_]+)")re");
  int keys = 0;
  for (std::sregex_iterator it(reader.begin(), reader.end(), key_read), end; it != end; ++it, ++keys) {
    const std::string key = (*it)[1];
    INFO(key);
    const std::regex shown("(^|\n)#? *(" + key + " =|\\[" + key + "\\]|\\[\\[" + key + "\\]\\])");
    CHECK(std::regex_search(example, shown));
  }
  CHECK(keys > 30);
}

TEST_CASE("invalid TOML names the line", "[config]") {
  CHECK_THAT(error_of("[run\nname = 1\n"), Catch::Contains("test.toml:1: not valid TOML"));
}

TEST_CASE("a secret written into the config never appears in the error", "[config]") {
  std::string e = error_of("[llm]\napi_key = \"sk-SECRET-123\"\n[[kernel]]\ntype = \"rmsnorm\"\n");
  CHECK_THAT(e, Catch::Contains("unknown key 'llm.api_key'"));
  CHECK_THAT(e, !Catch::Contains("SECRET"));
}

TEST_CASE("a value shaped like an API key is told from a variable's name and a file's path", "[config][secret]") {
  for (const char* key : {"sk-ant-api03-Zx9kQ2mB7vR4tY1uI8oP3aS6dF0gH5jK", "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab",
                          "sk-1234567890abcdefghij", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345",
                          "AKIAIOSFODNN7EXAMPLE", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "  sk-ant-api03-Zx9kQ2mB7vR4tY1uI8oP\n",
                          "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "Zx9kQ2mB7vR4tY1uI8oP3aS6dF0gH5jK", "Bearer abcdef0123456789abcdef"}) {
    INFO(key);
    CHECK(looks_like_api_key(key));
  }
  for (const char* name : {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AK_TEST_KEY", "hf_token", "MY_COMPANY_LLM_API_KEY_2024",
                           "/run/credentials/autokernel.service/llm-key", "llm-key", "key.txt", "./secrets/anthropic-2024-05-01.key",
                           "/etc/autokernel/3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "SK_API_KEY"}) {
    INFO(name);
    CHECK_FALSE(looks_like_api_key(name));
  }
}

TEST_CASE("an API key pasted where its variable's name or file's path belongs is refused and never shown", "[config][secret]") {
  const std::string key = "sk-ant-api03-Zx9kQ2mB7vR4tY1uI8oP3aS6dF0gH5jK";
  const std::string head = "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\n";
  std::string e = error_of(head + "api_key_env = \"" + key + "\"\n" + kMinimal);
  CHECK_THAT(e, Catch::Contains("test.toml:4: llm.api_key_env holds what looks like an API key") && Catch::Contains("rotate it"));
  CHECK_THAT(e, !Catch::Contains("Zx9kQ2mB"));
  e = error_of(head + "api_key_file = \"" + key + "\"\n" + kMinimal);
  CHECK_THAT(e, Catch::Contains("test.toml:4: llm.api_key_file holds what looks like an API key") && Catch::Contains("LoadCredential="));
  CHECK_THAT(e, !Catch::Contains("Zx9kQ2mB"));
  // Not a key's shape, but no variable's name either: refused, and not shown in case it is a key.
  e = error_of(head + "api_key_env = \"my key\"\n" + kMinimal);
  CHECK_THAT(e, Catch::Contains("llm.api_key_env is not the name of an environment variable"));
  CHECK_THAT(e, !Catch::Contains("my key"));
}

TEST_CASE("a base_url the client cannot use is refused by the config, a key in it never shown", "[config][llm]") {
  for (const char* url : {"http://127.0.0.1:8000/v1", "https://api.anthropic.com", "http://[::1]:8080/v1", "http://llm-box.local/v1", ""})
    CHECK(base_url_problem(url).empty());
  CHECK_THAT(base_url_problem("api.openai.com/v1"), Catch::Contains("http:// or https://"));
  CHECK_THAT(base_url_problem("htp://x"), Catch::Contains("http:// or https://"));
  CHECK_THAT(base_url_problem("http://"), Catch::Contains("no host"));
  CHECK_THAT(base_url_problem("http://host:99999/v1"), Catch::Contains("port"));
  CHECK_THAT(base_url_problem("http://host:/v1"), Catch::Contains("port"));
  CHECK_THAT(base_url_problem("http://a b/v1"), Catch::Contains("space"));
  CHECK_THAT(base_url_problem("http://host/v1?x=1"), Catch::Contains("query"));
  CHECK_THAT(base_url_problem("https://user:pw@host/v1"), Catch::Contains("password"));
  std::string e = error_of("[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"localhost:8000/v1\"\n" + std::string(kMinimal));
  CHECK_THAT(e, Catch::Contains("test.toml:4: llm.base_url = \"localhost:8000/v1\": not a URL the client can use"));
  e = error_of("[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"https://me:sk-proj-4fGh7Jk9Lm2Np5Qr8St1@h/v1\"\n" + std::string(kMinimal));
  CHECK_THAT(e, Catch::Contains("llm.base_url (the value is not shown)") && Catch::Contains("password"));
  CHECK_THAT(e, !Catch::Contains("4fGh7Jk9"));
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
