// matmul's contract versions: version 2 computes y = x W^T (+ bias) as nn.Linear does, in fp16,
// bf16 and fp32; version 1 (a @ b) stays registered for files written for it.
#include <catch2/catch.hpp>

#include "harness/module/tensor_maps.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {
std::vector<std::string> arg_names(const KernelSpec& spec) {
  std::vector<std::string> names;
  for (auto& a : spec.args) names.push_back(a.name);
  return names;
}
}  // namespace

TEST_CASE("matmul version 2 takes x, a Linear's weight, a bias and has_bias, in fp16, bf16 and fp32", "[spec][matmul]") {
  const KernelSpec& spec = matmul_spec();
  CHECK(spec.contract_version == 2);
  CHECK(find_spec("matmul") == &spec);
  CHECK(arg_names(spec) ==
        std::vector<std::string>{"x", "w", "bias", "y", "workspace", "tile_counters", "M", "N", "K", "has_bias"});
  CHECK(spec.shape_names == std::vector<std::string>{"M", "N", "K", "has_bias"});
  CHECK(spec.dtypes == std::vector<DType>{DType::F16, DType::BF16, DType::F32});
  CHECK(spec.tolerance(DType::F32).atol == 1e-4);   // KernelBench's fp32 tolerance
  // w is [N, K]: N * K elements, rows of K (K-major, as TMA and wgmma see it).
  const Shape s{4, 5, 6, 1};
  CHECK(spec.args[1].numel(s) == 5 * 6);
  CHECK(spec.args[1].row_length(s) == 6);
  CHECK(spec.args[2].numel(s) == 5);
  CHECK(spec.args[3].numel(s) == 4 * 5);
  CHECK(spec.args[9].int_value(s) == 1);
  // Split-K and stream-K: an fp32 workspace shaped as y, and counters for every 64 x 64 block of y
  // and a tile scheduler's bookkeeping, zero before and after each launch.
  CHECK(spec.args[4].kind == ArgSpec::Scratch);
  CHECK(spec.args[4].elem == Elem::F32);
  CHECK(spec.args[4].numel({100, 200, 8, 0}) == 100 * 200);
  CHECK(spec.args[5].kind == ArgSpec::Counters);
  CHECK(spec.args[5].elem == Elem::U32);
  CHECK(spec.args[5].numel({100, 200, 8, 0}) == 2 * 4 + 32);
  CHECK_THAT(spec.abi(), Catch::Contains("const T* __restrict__ bias") && Catch::Contains("float* __restrict__ workspace") &&
                             Catch::Contains("unsigned int* tile_counters") && Catch::Contains("int has_bias"));
  // The bias is N more values read when there is one.
  CHECK(spec.bytes({2, 3, 5, 1}, DType::F32) == 4.0 * (2 * 5 + 3 * 5 + 2 * 3 + 3));
  CHECK(spec.bytes({2, 3, 5, 0}, DType::F32) == 4.0 * (2 * 5 + 3 * 5 + 2 * 3));
  CHECK(spec.flops({4096, 4096, 4096, 0}) == 2.0 * 4096 * 4096 * 4096);
  LaunchGeometry g;
  g.tile_m = 64;
  g.tile_n = 32;
  CHECK(spec.grid({100, 100, 7, 1}, g) == 2 * 4);
  auto gemms = spec.cublas_gemms({4, 5, 6, 1});
  REQUIRE(gemms.size() == 1);
  CHECK(gemms[0].b_transposed);
  CHECK_FALSE(matmul_v1_spec().cublas_gemms({4, 5, 6})[0].b_transposed);
}

TEST_CASE("the CPU reference of version 2 is x W^T, plus the bias only where has_bias is 1", "[spec][matmul]") {
  // x [2, 3], w [2, 3] as a Linear stores it (out_features rows), bias [2].
  const std::vector<double> x{1, 2, 3, 4, 5, 6}, w{1, 0, -1, 2, 1, 0}, bias{10, 20};
  auto with = matmul_spec().cpu_reference({2, 2, 3, 1}, DType::F32, {x, w, bias})[0];
  CHECK(with == std::vector<double>{1 - 3 + 10, 2 + 2 + 20, 4 - 6 + 10, 8 + 5 + 20});
  auto without = matmul_spec().cpu_reference({2, 2, 3, 0}, DType::F32, {x, w, bias})[0];
  CHECK(without == std::vector<double>{-2, 4, -2, 13});
}

TEST_CASE("a matmul shape's bias flag is 0 or 1, and the stages run both", "[spec][matmul]") {
  const KernelSpec& spec = matmul_spec();
  CHECK_THAT(spec.shape_error({4, 4, 4, 2}), Catch::Contains("0 or 1"));
  CHECK(spec.shape_error({4, 4, 4, 0}).empty());
  int with = 0, without = 0;
  std::vector<Shape> all = spec.sweep_shapes;
  all.insert(all.end(), spec.edge_shapes.begin(), spec.edge_shapes.end());
  for (const Shape& s : all) {
    INFO(shape_str(s));
    REQUIRE(s.size() == 4);
    CHECK(spec.shape_error(s).empty());
    (s[3] ? with : without)++;
  }
  CHECK(with >= 4);
  CHECK(without >= 4);
  CHECK(spec.bench_shape == Shape{4096, 4096, 4096, 0});
}

TEST_CASE("a 0 in a shape is taken only where the type takes a flag: matmul's has_bias", "[spec][matmul]") {
  CHECK(parse_shape("4096x4096x4096x0") == Shape{4096, 4096, 4096, 0});
  CHECK_FALSE(parse_shape("4096x-1").has_value());
  CHECK(matmul_spec().zero_dimension_error({4096, 4096, 4096, 0}).empty());
  CHECK_THAT(matmul_spec().zero_dimension_error({0, 4096, 4096, 1}), Catch::Contains("M is 0"));
  CHECK_THAT(matmul_spec().zero_dimension_error({8, 8, 0, 1}), Catch::Contains("K is 0"));
  CHECK_THAT(softmax_spec().zero_dimension_error({0, 128}), Catch::Contains("rows is 0"));
}

TEST_CASE("matmul version 1 stays registered, and its old starter is judged under it", "[spec][matmul]") {
  const KernelSpec* v1 = find_spec("matmul", 1);
  REQUIRE(v1 == &matmul_v1_spec());
  CHECK(arg_names(*v1) == std::vector<std::string>{"a", "b", "c", "M", "N", "K"});
  CHECK(v1->dtypes == std::vector<DType>{DType::F16, DType::BF16});
  CHECK(v1->starter_source().empty());   // the embedded starter is written for version 2
  // a @ b with b [K, N]: a [1, 2] times b [2, 2].
  CHECK(v1->cpu_reference({1, 2, 2}, DType::F32, {{1, 2}, {3, 4, 5, 6}})[0] == std::vector<double>{13, 16});
  auto old = spec_for_file("matmul", test::read_file(AK_SOURCE_DIR "/tests/data/matmul_v1.cu"));
  REQUIRE(old.ok());
  CHECK(*old == v1);
  auto now = spec_for_file("matmul", matmul_spec().starter_source());
  REQUIRE(now.ok());
  CHECK(*now == &matmul_spec());
  for (const auto& v : kernel_variants("matmul")) {
    INFO(v.name);
    auto s = spec_for_file("matmul", *v.source);
    REQUIRE(s.ok());
    CHECK((*s)->contract_version == 2);
  }
}

TEST_CASE("a map whose box row is too wide for fp32 is not built in fp32, and one too wide for every dtype is refused",
          "[spec][matmul][tensor_maps]") {
  // 64 columns of K: one 128-byte swizzle row in fp16 and bf16, 256 bytes in fp32.
  auto parsed = parse_tensor_maps({1, 64, 64, 128, 256}, matmul_spec());
  REQUIRE(parsed.ok());
  CudaDriver none;   // the fp32 map is skipped before any driver call
  std::vector<CUdeviceptr> operands{0x10000, 0x20000, 0x30000, 0x40000, 0x50000, 0x60000, 0, 0, 0, 0};
  auto p = encode_tensor_maps(none, *parsed, matmul_spec(), {64, 64, 64, 0}, DType::F32, operands);
  REQUIRE(p.ok());
  CHECK(p->built == 0u);
  auto wide = parse_tensor_maps({1, 128, 64, 128, 256}, matmul_spec());   // 256 bytes even in fp16
  REQUIRE_FALSE(wide.ok());
  CHECK_THAT(wide.error().message, Catch::Contains("wider than the 128-byte swizzle"));
}
