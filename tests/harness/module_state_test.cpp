// What a compiled module keeps between launches, read from real NVRTC cubins (no GPU needed).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "harness/candidate_compile.hpp"
#include "harness/module_state.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

const std::string kHead = "extern \"C\" __constant__ int ak_block_threads = 256;\n";

std::vector<char> cubin_of(const std::string& body) {
  CompileRequest req{kHead + body, "state.cu", {"k"}, "sm_90a"};
  auto out = nvrtc_compile(req);
  REQUIRE(out.ok());
  INFO(out->log);
  REQUIRE(out->ok);
  return out->cubin;
}

std::vector<std::string> names(const std::vector<ModuleState>& found) {
  std::vector<std::string> n;
  for (auto& f : found) n.push_back(f.symbol);
  return n;
}

}  // namespace

TEST_CASE("every starter keeps no state of its own", "[module_state]") {
  for (const KernelSpec* spec : all_specs()) {
    INFO(spec->type);
    auto c = compile_candidate(*spec, spec->starter_source(), spec->type + ".cu", "sm_90a");
    REQUIRE(c.ok());
    INFO(c->message);
    CHECK(c->ok);
  }
}

TEST_CASE("a __device__ array without an initialiser is refused by name", "[module_state]") {
  auto found = module_state(cubin_of("__device__ float g_memo[4096];\n"
                                     "extern \"C\" __global__ void k(float* y) { g_memo[threadIdx.x] += y[0]; y[1] = g_memo[0]; }\n"));
  REQUIRE(found.size() == 1);
  CHECK(found[0].symbol == "g_memo");
  CHECK_THAT(found[0].what, Catch::Contains("16384 bytes"));
  CHECK_THAT(describe_module_state(found), Catch::Contains("remember answers between launches"));
}

TEST_CASE("a static variable in device code, a __managed__ variable and device malloc are refused", "[module_state]") {
  auto found = module_state(cubin_of(
      "__managed__ int g_managed;\n"
      "extern \"C\" __global__ void k(float* y) {\n"
      "  static __device__ unsigned s_launches; s_launches++;\n"
      "  float* p = (float*)malloc(64); if (p) { p[0] = y[0]; y[1] = p[0] + s_launches + g_managed; free(p); }\n"
      "}\n"));
  auto n = names(found);
  CHECK(std::count(n.begin(), n.end(), "g_managed") == 1);
  CHECK(std::count(n.begin(), n.end(), "malloc") == 1);
  CHECK(std::count_if(n.begin(), n.end(), [](auto& s) { return s.find("s_launches") != std::string::npos; }) == 1);
}

TEST_CASE("constants and initialised variables are not refused, and their image is kept to restore before each launch", "[module_state]") {
  auto cubin = cubin_of("constexpr int kRows = 4;\n__device__ int g_start = 7;\n"
                        "extern \"C\" __global__ void k(int* y) { y[threadIdx.x] = kRows + g_start++; }\n");
  CHECK(module_state(cubin).empty());
  auto vars = initialized_memory(cubin);
  auto value_of = [&](const std::string& name) {
    for (auto& v : vars)
      if (v.name == name && v.image.size() == 4) {
        int x;
        std::memcpy(&x, v.image.data(), 4);
        return x;
      }
    return -1;
  };
  CHECK(value_of("kRows") == 4);
  CHECK(value_of("g_start") == 7);
}

TEST_CASE("a string literal in device code is refused, since it cannot be written back", "[module_state]") {
  auto found = module_state(cubin_of("extern \"C\" __global__ void k(int* y) { printf(\"launch %d\\n\", y[0]); }\n"));
  REQUIRE(found.size() == 1);
  CHECK_THAT(found[0].what, Catch::Contains("string literal"));
}

TEST_CASE("a cubin that is not ELF is refused rather than trusted", "[module_state]") {
  auto found = module_state(std::vector<char>{'n', 'o', 't', ' ', 'e', 'l', 'f'});
  REQUIRE(found.size() == 1);
  CHECK_THAT(found[0].what, Catch::Contains("refused"));
}

TEST_CASE("autokernel compile refuses a file with module state, naming it", "[module_state][cli]") {
  test::TempDir d;
  std::string src = rmsnorm_spec().starter_source();
  src.replace(src.find("template <typename T>\n__global__"), 0, "__device__ float g_cache[1 << 20];\n");
  auto file = d.write("memo.cu", src);
  auto r = test::run_autokernel("compile " + file + " --kernel rmsnorm");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("g_cache (writable device memory, 4194304 bytes)"));
}
