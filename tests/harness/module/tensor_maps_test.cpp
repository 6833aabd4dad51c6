// The tensor maps a kernel file declares: parsed and checked without a GPU, and the fallback when
// a call cannot be mapped (on matmul version 1, fp16 and bf16: a@b with b as K x N; version 2
// is in tests/kernels_cuda/matmul_type_test.cpp).
#include <catch2/catch.hpp>

#include "harness/module/tensor_maps.hpp"
#include "kernels_cuda/registry.hpp"

using namespace ak;

namespace {
std::vector<int> decl(int operand, int cols, int rows, int swizzle = 128, int l2 = 256) {
  return {operand, cols, rows, swizzle, l2};
}
std::string refusal(const std::vector<int>& ints, const KernelSpec& spec = matmul_v1_spec()) {
  auto r = parse_tensor_maps(ints, spec);
  return r.ok() ? "" : r.error().message;
}
}  // namespace

TEST_CASE("maps over a and b with 128-byte swizzle parse into declarations", "[tensor_maps]") {
  std::vector<int> ints = decl(0, 64, 128);
  for (int v : decl(1, 64, 64, 128, 0)) ints.push_back(v);
  auto r = parse_tensor_maps(ints, matmul_v1_spec());
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].operand == 0);
  CHECK((*r)[0].box_rows == 128);
  CHECK((*r)[1].operand == 1);
  CHECK((*r)[1].l2_promotion == 0);
}

TEST_CASE("a map declaration that cannot hold for any shape is refused naming the map and the rule", "[tensor_maps]") {
  CHECK_THAT(refusal({0, 64, 128, 128}), Catch::Contains("[N][5]"));          // four fields
  CHECK_THAT(refusal(decl(3, 64, 64)), Catch::Contains("'M' is not a buffer"));
  CHECK_THAT(refusal(decl(9, 64, 64)), Catch::Contains("not an argument of matmul_kernel"));
  CHECK_THAT(refusal(decl(0, 64, 300)), Catch::Contains("1 to 256"));
  CHECK_THAT(refusal(decl(0, 0, 64)), Catch::Contains("1 to 256"));
  CHECK_THAT(refusal(decl(0, 4, 64, 0)), Catch::Contains("multiple of 16"));        // 8 bytes a row
  CHECK_THAT(refusal(decl(0, 128, 64, 128)), Catch::Contains("wider than the 128-byte swizzle"));
  CHECK_THAT(refusal(decl(0, 64, 64, 48)), Catch::Contains("swizzle 48"));
  CHECK_THAT(refusal(decl(0, 64, 64, 128, 32)), Catch::Contains("L2 promotion 32"));
  CHECK_THAT(refusal(decl(1, 64, 64, 128, 32)), Catch::Contains("ak_tensor_maps[0] (b)"));
  std::vector<int> nine;
  for (int i = 0; i < 9; ++i)
    for (int v : decl(0, 64, 64)) nine.push_back(v);
  CHECK_THAT(refusal(nine), Catch::Contains("at most 8"));
  // A row-wise type's buffers have no row length in their spec: nothing there can be mapped.
  CHECK_THAT(refusal(decl(0, 64, 1), softmax_spec()), Catch::Contains("no row length"));
}

TEST_CASE("a map views its operand as rows of the operand's inner dimension", "[tensor_maps]") {
  const TensorMapDecl b{1, 64, 64, 128, 0};
  TensorMapView v = tensor_map_view(matmul_v1_spec(), b, {4096, 2048, 1024}, DType::BF16);
  CHECK(v.cols == 2048);   // b is K x N
  CHECK(v.rows == 1024);
  CHECK(v.elem_bytes == 2);
  CHECK(v.type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  // fused_mlp's fp32 scratch is mapped as T: a kernel may keep the hidden activations in T.
  const TensorMapDecl hidden{5, 64, 64, 128, 0};
  v = tensor_map_view(fused_mlp_spec(), hidden, {256, 512, 1024}, DType::F16);
  CHECK(v.cols == 1024);
  CHECK(v.rows == 512);
  CHECK(v.type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  const TensorMapDecl q{0, 64, 128, 128, 0};
  v = tensor_map_view(flash_attention_v1_spec(), q, {2, 3, 33, 128}, DType::F16);
  CHECK(v.rows == 2 * 3 * 33);
  CHECK(v.cols == 128);
  // Version 2: rows of the operand's seq stride, so a projection's q is [B * S, Hq * D].
  v = tensor_map_view(flash_attention_spec(), q, {2, 3, 1, 33, 128, 1, 2}, DType::F16);
  CHECK(v.rows == 2 * 33);
  CHECK(v.cols == 3 * 128);
}

TEST_CASE("a call whose rows are not 16-byte multiples or whose base is unaligned gets no map", "[tensor_maps]") {
  const TensorMapDecl a{0, 64, 128, 128, 0};
  auto reason = [&](const Shape& s, CUdeviceptr base = 0x10000) {
    return unmappable_reason(tensor_map_view(matmul_v1_spec(), a, s, DType::F16), base);
  };
  CHECK(reason({4096, 4096, 4096}).empty());
  CHECK(reason({3, 5, 8}).empty());                          // 16-byte rows of a: mappable
  CHECK_THAT(reason({3, 5, 7}), Catch::Contains("not a multiple of 16"));
  CHECK_THAT(reason({777, 1111, 555}), Catch::Contains("1110 bytes"));
  CHECK_THAT(reason({1, 1, 1}), Catch::Contains("not a multiple of 16"));
  CHECK_THAT(reason({64, 64, 64}, 0x10008), Catch::Contains("16-byte aligned"));
}

TEST_CASE("without a driver call, an unmappable operand leaves its map zero and its bit clear", "[tensor_maps]") {
  // Every map unmappable: encode never reaches the driver, so a default driver table is enough.
  CudaDriver none;
  std::vector<TensorMapDecl> maps{{0, 64, 128, 128, 0}, {1, 64, 64, 128, 0}};
  std::vector<CUdeviceptr> operands{0x10000, 0x20000, 0x30000, 0, 0, 0};
  auto p = encode_tensor_maps(none, maps, matmul_v1_spec(), {3, 5, 7}, DType::F16, operands);
  REQUIRE(p.ok());
  CHECK(p->built == 0u);
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&p->map[0]);
  bool all_zero = true;
  for (size_t i = 0; i < sizeof(p->map); ++i) all_zero = all_zero && bytes[i] == 0;
  CHECK(all_zero);
}
