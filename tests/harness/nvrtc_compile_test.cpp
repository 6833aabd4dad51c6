#include <catch2/catch.hpp>

#include <algorithm>

#include "harness/kernel_contract.hpp"
#include "harness/nvrtc_compile.hpp"
#include "kernels_cuda/registry.hpp"

using namespace ak;

namespace {
CompileRequest request(const KernelSpec& spec, const std::string& source, const std::string& arch, bool ref = false) {
  CompileRequest r{source, spec.type + ".cu", {}, arch};
  if (ref) r.name_expressions = reference_expressions(spec);
  else
    for (DType d : spec.dtypes) r.name_expressions.push_back(entry_expression(spec, d));
  return r;
}
}  // namespace

TEST_CASE("every starter and every reference compiles for sm_90a and sm_80 without a GPU", "[nvrtc]") {
  for (auto* spec : all_specs())
    for (const char* arch : {"sm_90a", "sm_80"})
      for (bool ref : {false, true}) {
        INFO(spec->type << " " << arch << (ref ? " reference" : " starter"));
        auto out = nvrtc_compile(request(*spec, ref ? spec->reference_source : spec->starter_source(), arch, ref));
        REQUIRE(out.ok());
        CHECK(out->ok);
        CHECK(out->log.empty());
        CHECK(out->cubin.size() > 1000);
        // One entry per dtype; the reference twice per dtype, but its <float, float> serves both.
        const size_t n = spec->dtypes.size();
        const bool has_fp32 = std::find(spec->dtypes.begin(), spec->dtypes.end(), DType::F32) != spec->dtypes.end();
        REQUIRE(out->functions.size() == (ref ? 2 * n - has_fp32 : n));
        for (auto& f : out->functions) {
          CHECK_FALSE(f.lowered_name.empty());
          CHECK(f.registers > 0);   // ptxas statistics were read
        }
      }
}

TEST_CASE("a compile error comes back verbatim with the line", "[nvrtc]") {
  std::string src = softmax_spec().starter_source();
  src.replace(src.find("const float inv"), 15, "const flaot inv");
  auto out = nvrtc_compile(request(softmax_spec(), src, "sm_90a"));
  REQUIRE(out.ok());
  CHECK_FALSE(out->ok);
  CHECK_THAT(out->log, Catch::Contains("softmax.cu(") && Catch::Contains("flaot"));
  CHECK(out->cubin.empty());
}

TEST_CASE("a file that lacks an instantiation says which", "[nvrtc]") {
  auto out = nvrtc_compile(request(softmax_spec(), "extern \"C\" __global__ void k() {}", "sm_90a"));
  REQUIRE(out.ok());
  CHECK_FALSE(out->ok);
}

TEST_CASE("spilling is reported", "[nvrtc]") {
  const char* src = R"(
extern "C" __constant__ int ak_block_threads = 32;
template <typename T> __global__ void __launch_bounds__(1024, 2) softmax_kernel(const T* x, T* y, int r, int c) {
  float a[256];
  for (int i = 0; i < 256; ++i) a[i] = float(x[(i * 7919 + threadIdx.x) % c]);
  float s = 0;
  for (int i = 0; i < 256; ++i) s += a[(i * 31) & 255] * a[i];
  y[threadIdx.x] = T(s);
}
)";
  CompileRequest r{src, "spill.cu", {"softmax_kernel<float>"}, "sm_90a"};
  auto out = nvrtc_compile(r);
  REQUIRE(out.ok());
  REQUIRE(out->ok);
  CHECK(out->functions[0].stack_bytes + out->functions[0].spill_stores > 0);
}

TEST_CASE("an unknown architecture is an error naming it", "[nvrtc]") {
  auto out = nvrtc_compile(request(softmax_spec(), softmax_spec().starter_source(), "sm_1000"));
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.error().message, Catch::Contains("sm_1000"));
}

TEST_CASE("long logs keep their head and say how much was cut", "[nvrtc]") {
  std::string log(20000, 'x');
  std::string t = truncate_log(log, 8000);
  CHECK(t.size() < 8100);
  CHECK_THAT(t, Catch::Contains("12000 more characters"));
  CHECK(arch_for(9, 0) == "sm_90a");
  CHECK(arch_for(8, 6) == "sm_86");
}
