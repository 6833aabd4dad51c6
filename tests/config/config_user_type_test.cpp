// [[kernel]] spec = "path": a kernel of a user type (docs/user-types.md).
#include <catch2/catch.hpp>

#include "config/config.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

/// The GELU type under another name, so that tests register no name twice with different texts.
std::string gelu_named(const std::string& name) {
  std::string t = test::kGeluSpec;
  t.replace(t.find("gelu_tanh\""), 10, name + "\"");
  return t;
}

}  // namespace

TEST_CASE("a kernel of a user type takes its type, shape and dtype from the spec", "[config][user_type]") {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path / "types");
  dir.write("types/gelu_tanh.py", test::kGeluReference);
  dir.write("types/gelu.toml", gelu_named("gelu_config_a"));
  const std::string cfg = dir.write("run.toml", "[[kernel]]\nspec = \"types/gelu.toml\"\n");
  auto c = load_config(cfg);
  INFO((c ? "" : c.error().message));
  REQUIRE(c.ok());
  const KernelEntry& k = c->kernels.at(0);
  CHECK(k.type == "gelu_config_a");
  CHECK(k.shape == std::vector<int64_t>{4096, 393216});
  CHECK(k.dtype == "fp32");
  REQUIRE(k.user_type);
  CHECK(k.user_type->reference_source == test::kGeluReference);
  REQUIRE(find_spec("gelu_config_a"));
  CHECK(find_spec("gelu_config_a")->entry == "gelu_config_a_kernel");
  // Read again (SIGHUP): the same spec registers again without a clash.
  CHECK(load_config(cfg).ok());
  CHECK(c->convergence.first_candidate_tries == 5);
}

TEST_CASE("a user type's kernel is checked against its spec", "[config][user_type]") {
  test::TempDir dir;
  dir.write("gelu_tanh.py", test::kGeluReference);
  dir.write("gelu.toml", gelu_named("gelu_config_b"));
  auto refused = [&](const std::string& kernel) {
    auto c = parse_config("[[kernel]]\n" + kernel, (dir.path / "run.toml").string());
    REQUIRE_FALSE(c.ok());
    return c.error().message;
  };
  const std::string at = (dir.path / "run.toml").string() + ":";
  CHECK_THAT(refused("spec = \"gelu.toml\"\ndtype = \"bf16\"\n"), Catch::Contains("kernel.dtype = \"bf16\": expected one of \"fp16\", \"fp32\""));
  CHECK_THAT(refused("spec = \"gelu.toml\"\nshape = [1, 2, 3]\n"), Catch::Contains("3 dimensions: expected 2 dimensions for gelu_config_b (batch_size, dim)"));
  CHECK_THAT(refused("spec = \"gelu.toml\"\ntype = \"rmsnorm\"\n"), Catch::Contains(at + "1: [[kernel]] has both type and spec: keep one"));
  CHECK_THAT(refused("spec = \"none.toml\"\n"),
             Catch::Contains(at + "1: [[kernel]] spec = \"none.toml\": the user type is refused:") && Catch::Contains("cannot read the user type's spec"));
  CHECK_THAT(refused("weight = 0.5\n"), Catch::Contains("needs a type (a built-in type) or a spec"));
  dir.write("bad.toml", gelu_named("gelu_config_c") + "\nspeed = 1\n");
  CHECK_THAT(refused("spec = \"bad.toml\"\n"), Catch::Contains("the user type is refused:\n") && Catch::Contains("bad.toml:") &&
                                                  Catch::Contains("unknown key 'speed'"));
  // Another spec under a registered name is refused by name.
  dir.write("other.toml", gelu_named("gelu_config_b") + "\n# another text\n");
  CHECK_THAT(refused("spec = \"gelu.toml\"\n[[kernel]]\nspec = \"other.toml\"\n"),
             Catch::Contains("user type \"gelu_config_b\" is already defined by"));
  CHECK_THAT(refused("spec = \"gelu.toml\"\n[convergence]\nfirst_candidate_tries = 0\n"), Catch::Contains("first_candidate_tries = 0"));
}
