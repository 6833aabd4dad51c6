#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

#include "harness/compile/kernel_contract.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "harness/compile/ptxas_log.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/support.hpp"

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

TEST_CASE("every variant compiles for sm_90a without a GPU, one entry per dtype", "[nvrtc]") {
  for (auto* spec : all_specs())
    for (auto& v : kernel_variants(spec->type)) {
      INFO(spec->type << " variant " << v.name);
      auto own = spec_for_file(spec->type, *v.source);   // the contract version the file declares
      REQUIRE(own.ok());
      auto out = nvrtc_compile(request(**own, *v.source, "sm_90a"));
      REQUIRE(out.ok());
      CHECK(out->ok);
      CHECK(out->log.empty());
      REQUIRE(out->functions.size() == (*own)->dtypes.size());
    }
}

TEST_CASE("matmul's version 1 starter, kept for old run folders, compiles under version 1", "[nvrtc][matmul]") {
  const std::string v1 = test::read_file(AK_SOURCE_DIR "/tests/data/matmul_v1.cu");
  auto spec = spec_for_file("matmul", v1);
  REQUIRE(spec.ok());
  REQUIRE(*spec == &matmul_v1_spec());
  auto out = nvrtc_compile(request(**spec, v1, "sm_90a"));
  REQUIRE(out.ok());
  INFO("compile log:\n" << out->log);
  CHECK(out->ok);
  CHECK(out->functions.size() == 2);   // fp16 and bf16
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

TEST_CASE("a typo in inline PTX reaches the log with ptxas's error, its PTX line and the file's line", "[nvrtc]") {
  std::string src = softmax_spec().starter_source();
  // One line of the file, the first statement of the entry point's body, becomes bad inline PTX.
  const std::string bad = "  { unsigned ak_probe; asm volatile(\"mov.u33 %0, 7;\" : \"=r\"(ak_probe)); (void)ak_probe; }\n";
  const size_t body = src.find('{', src.find("softmax_kernel(")) + 1;
  const size_t line_end = src.find('\n', body) + 1;
  src.insert(line_end, bad);
  const int bad_line = int(std::count(src.begin(), src.begin() + long(line_end), '\n')) + 1;
  auto out = nvrtc_compile(request(softmax_spec(), src, "sm_90a"));
  REQUIRE(out.ok());
  CHECK_FALSE(out->ok);
  INFO(out->log);
  CHECK_THAT(out->log, Catch::Contains("ptxas application ptx input, line ") && Catch::Contains("error") &&
                           Catch::Contains(".u33"));
  CHECK_THAT(out->log, Catch::Contains("at softmax.cu line " + std::to_string(bad_line) + ", PTX line ") &&
                           Catch::Contains(": mov.u33 %r"));
  CHECK_THAT(out->log, !Catch::Contains("Compiling entry function") && !Catch::Contains("bytes stack frame"));
  CHECK(out->log != "NVRTC_ERROR_COMPILATION");
}

TEST_CASE("ptxas statistics are read and dropped, its errors and warnings kept in order", "[nvrtc]") {
  std::vector<FunctionInfo> functions(1);
  functions[0].lowered_name = "_Z1kPf";
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z1kPf\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n"
      "ptxas application ptx input, line 2; warning : Unused variable\n"
      "ptxas application ptx input, line 5; error   : Unknown symbol '%bogus'\n"
      "ptxas fatal   : Ptx assembly aborted due to errors";
  const std::string kept = split_ptxas_log(log, functions);
  CHECK(kept ==
        "ptxas application ptx input, line 2; warning : Unused variable\n"
        "ptxas application ptx input, line 5; error   : Unknown symbol '%bogus'\n"
        "ptxas fatal   : Ptx assembly aborted due to errors");
  CHECK(functions[0].registers == 40);
  CHECK(functions[0].stack_bytes == 16);
  CHECK(functions[0].spill_stores == 8);
  CHECK(functions[0].spill_loads == 4);
  CHECK(functions[0].static_smem_bytes == 2048);

  const std::string ptx = ".loc 1 12 3\n  mov.u32 %r1, 0;\n.loc 2 40 1\n  // header\n  mov.u32 %r2, %bogus;\n"
                          ".file 1 \"/usr/local/cuda/include/k.cu\"\n.file 2 \"/usr/local/cuda/include/cuda_fp16.hpp\"";
  const std::string annotated = annotate_ptxas_lines(kept, ptx, "k.cu");
  CHECK_THAT(annotated, Catch::Contains("Unused variable\n    at k.cu line 12, PTX line 2: mov.u32 %r1, 0;\n"));
  CHECK_THAT(annotated, Catch::Contains("Unknown symbol '%bogus'\n    at PTX line 5: mov.u32 %r2, %bogus;\n"));
}

TEST_CASE("ptxas's numbers are read with checked parsing: one past an int reads as the largest int", "[nvrtc]") {
  std::vector<FunctionInfo> functions(1);
  functions[0].lowered_name = "k";
  (void)split_ptxas_log("ptxas info    : Function properties for k\n"
                        "ptxas info    : Used 99999999999999999999 registers, 12 bytes smem",
                        functions);
  CHECK(functions[0].registers == std::numeric_limits<int>::max());
  CHECK(functions[0].static_smem_bytes == 12);
  int n = 7;
  CHECK_FALSE(parse_count("", n));
  CHECK_FALSE(parse_count("12x", n));
  CHECK_FALSE(parse_count("-3", n));
  CHECK(n == 7);
  CHECK(parse_count("2147483647", n));
  CHECK(n == 2147483647);
  // An annotation never reads past the PTX: a line number beyond it adds nothing.
  CHECK(annotate_ptxas_lines("ptxas application ptx input, line 99; error : x", ".loc 1 1 1", "k.cu") ==
        "ptxas application ptx input, line 99; error : x");
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
