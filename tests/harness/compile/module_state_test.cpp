// What a compiled module keeps between launches, read from real NVRTC cubins (no GPU needed).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "harness/compile/candidate_compile.hpp"
#include "harness/compile/module_state.hpp"
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

const WritableSection* section_holding(const std::vector<WritableSection>& sections, const std::string& symbol) {
  for (auto& w : sections)
    for (auto& sym : w.symbols)
      if (sym.name == symbol) return &w;
  return nullptr;
}

TEST_CASE("a __device__ array is located to be held to its image, not refused", "[module_state]") {
  auto cubin = cubin_of("__device__ float g_memo[4096];\n"
                        "extern \"C\" __global__ void k(float* y) { g_memo[threadIdx.x] += y[0]; y[1] = g_memo[0]; }\n");
  CHECK(module_state(cubin).empty());
  auto sections = writable_sections(cubin);
  const WritableSection* w = section_holding(sections, "g_memo");
  REQUIRE(w);
  CHECK(w->name == ".nv.global");
  CHECK(w->image.size() >= 16384);
  CHECK(std::all_of(w->image.begin(), w->image.end(), [](char c) { return c == 0; }));
  CHECK_FALSE(w->anchor.empty());
}

TEST_CASE("managed memory, device malloc, printf and assert are refused by name", "[module_state]") {
  auto found = module_state(cubin_of(
      "__managed__ int g_managed;\n"
      "extern \"C\" __global__ void k(float* y) {\n"
      "  static __device__ unsigned s_launches; s_launches++;\n"
      "  float* p = (float*)malloc(64); if (p) { p[0] = y[0]; y[1] = p[0] + s_launches + g_managed; free(p); }\n"
      "  if (y[0] > 1) printf(\"launch %d\\n\", (int)y[0]);\n"
      "  assert(y[2] == y[2]);\n"
      "}\n"));
  auto n = names(found);
  CHECK(std::count(n.begin(), n.end(), "g_managed") == 1);
  CHECK(std::count(n.begin(), n.end(), "malloc") == 1);
  CHECK(std::count(n.begin(), n.end(), "vprintf") == 1);
  CHECK(std::count(n.begin(), n.end(), "__assertfail") == 1);
  // A function-local static is memory like any other: held to its image, not refused.
  CHECK(std::count_if(n.begin(), n.end(), [](auto& s) { return s.find("s_launches") != std::string::npos; }) == 0);
  CHECK_THAT(describe_module_state(found), Catch::Contains("device printf (vprintf)"));
}

TEST_CASE("initialised variables keep their image, and the padding between them is named as padding", "[module_state]") {
  auto cubin = cubin_of("constexpr int kRows = 4;\n__device__ int g_start = 7;\n"
                        "__device__ __align__(256) const char pad_a = 1;\n__device__ __align__(256) const char pad_b = 2;\n"
                        "extern \"C\" __global__ void k(int* y) { y[threadIdx.x] = kRows + g_start++ + pad_a + pad_b; }\n");
  CHECK(module_state(cubin).empty());
  auto sections = writable_sections(cubin);
  auto value_of = [&](const std::string& name) {
    const WritableSection* w = section_holding(sections, name);
    if (!w) return -1;
    for (auto& sym : w->symbols)
      if (sym.name == name && sym.size == 4 && sym.offset + 4 <= w->image.size()) {
        int x;
        std::memcpy(&x, w->image.data() + sym.offset, 4);
        return x;
      }
    return -1;
  };
  CHECK(value_of("kRows") == 4);
  CHECK(value_of("g_start") == 7);
  const WritableSection* w = section_holding(sections, "pad_a");
  REQUIRE(w);
  uint64_t at = 0;
  for (auto& sym : w->symbols)
    if (sym.name == "pad_a") at = sym.offset;
  CHECK(w->describe(at) == "pad_a");
  CHECK(w->describe(at + 128) == "padding after pad_a");
}

TEST_CASE("honest files compile: atomicExch and atomicCAS on int, static constexpr members of class templates", "[module_state]") {
  // CUDA 13's atomics put a zero-initialised helper variable in the module, and a static
  // constexpr template member lands in module memory: neither keeps state, so neither is refused.
  for (const std::string body :
       {"extern \"C\" __global__ void k(int* y, unsigned* c) { atomicExch(c, 0u); y[0] = atomicCAS((int*)c + 1, 0, 1); }\n",
        "template <typename T> struct Tile { static constexpr int kSizes[3] = {16, 32, 64}; };\n"
        "extern \"C\" __global__ void k(int* y) { y[threadIdx.x] = Tile<float>::kSizes[threadIdx.x % 3]; }\n"}) {
    INFO(body);
    auto found = module_state(cubin_of(body));
    CHECK(found.empty());
    if (!found.empty()) INFO(describe_module_state(found));
  }
}

TEST_CASE("a cubin that is not ELF is refused rather than trusted", "[module_state]") {
  auto found = module_state(std::vector<char>{'n', 'o', 't', ' ', 'e', 'l', 'f'});
  REQUIRE(found.size() == 1);
  CHECK_THAT(found[0].what, Catch::Contains("refused"));
}

TEST_CASE("autokernel compile refuses a file that prints from the device, naming the call", "[module_state][cli]") {
  test::TempDir d;
  std::string src = rmsnorm_spec().starter_source();
  src.replace(src.find("template <typename T>\n__global__"), 0,
              "__device__ __noinline__ void say(float v) { printf(\"\\033]0;owned\\007 %f\\n\", v); }\n");
  src.replace(src.find("const float inv ="), 0, "if (threadIdx.x == 0) say(ss);\n  ");
  auto file = d.write("say.cu", src);
  auto r = test::run_autokernel("compile " + file + " --kernel rmsnorm");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("device printf (vprintf)"));
}

TEST_CASE("a file that includes <cuda/std/...> headers with static constexpr members compiles", "[module_state]") {
  // CUDA 13 moved them under include/cccl; their traits' static constexpr members land in module
  // memory, which is held to its image rather than refused.
  const std::string src =
      "#include <cuda/std/type_traits>\n#include <cuda/std/limits>\n#include <cuda/std/array>\n#include <cuda_fp16.h>\n"
      "extern \"C\" __constant__ int ak_block_threads = 256;\n"
      "template <typename T>\n__global__ void rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ weight, "
      "T* __restrict__ y, int rows, int cols, float eps) {\n"
      "  cuda::std::array<float, 2> a{1.f, 2.f};\n"
      "  if (threadIdx.x == 0 && rows < 0) y[0] = x[0] * weight[0] * (T)(a[1] + cuda::std::numeric_limits<float>::epsilon() + eps + cols);\n"
      "}\n";
  auto c = compile_candidate(rmsnorm_spec(), src, "cstd.cu", "sm_90a");
  REQUIRE(c.ok());
  INFO(c->message);
  CHECK(c->ok);
}
