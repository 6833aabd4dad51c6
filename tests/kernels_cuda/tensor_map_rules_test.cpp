// kernels_cuda/tensor_map_rules.h, the tensor-map rules the harness and every exported launcher share:
// the view of an operand, the checks that leave a map unbuilt, the declaration's rules, and what
// reaches the driver's cuTensorMapEncodeTiled, with a stand-in for the driver (no GPU).
#include <catch2/catch.hpp>

#include <vector>

#include "kernels_cuda/tensor_map_rules.h"

namespace {

/// What one cuTensorMapEncodeTiled call was given.
struct EncodeCall {
  CUtensorMapDataType type;
  cuuint32_t rank;
  void* base;
  cuuint64_t dims[2], stride;
  cuuint32_t box[2];
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2;
};
std::vector<EncodeCall> calls;
CUresult answer = CUDA_SUCCESS;

CUresult fake_encode(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* base, const cuuint64_t* dims,
                     const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t*, CUtensorMapInterleave,
                     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill) {
  calls.push_back({type, rank, base, {dims[0], dims[1]}, strides[0], {box[0], box[1]}, swizzle, l2});
  std::memset(map, 0xab, sizeof *map);
  return answer;
}

ak_tensor_map_decl decl(int operand, int cols, int rows, int swizzle = 128, int l2 = 256) {
  ak_tensor_map_decl d;
  d.operand = operand, d.box_cols = cols, d.box_rows = rows, d.swizzle = swizzle, d.l2_promotion = l2;
  return d;
}

}  // namespace

TEST_CASE("an operand is viewed as rows of its row length, a scratch of floats mapped in fp16 as twice the rows", "[tensor_map_rules]") {
  ak_tensor_map_view v = ak_tensor_map_view_of(2048, 4096 * 2048, 2, 2, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  CHECK(v.cols == 2048);
  CHECK(v.rows == 4096);
  v = ak_tensor_map_view_of(1024, 512 * 1024, 4, 2, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  CHECK(v.rows == 1024);
  CHECK(ak_tensor_map_view_of(0, 10, 2, 2, CU_TENSOR_MAP_DATA_TYPE_FLOAT16).rows == 0);
  CHECK(ak_tensor_map_type_of_dtype(0) == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  CHECK(ak_tensor_map_type_of_dtype(1) == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  CHECK(ak_tensor_map_type_of_dtype(2) == CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
}

TEST_CASE("an unaligned base, a row stride off 16 bytes, an empty operand or a dimension past 2^32 is unmappable", "[tensor_map_rules]") {
  const auto view = [](uint64_t cols, uint64_t rows, size_t bytes) {
    return ak_tensor_map_view_of(cols, cols * rows, bytes, bytes, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  };
  CHECK(ak_tensor_map_unmappable(view(2048, 4096, 2), 0x10000).empty());
  CHECK(ak_tensor_map_unmappable(view(8, 3, 2), 0x10000).empty());   // 16-byte rows
  CHECK_THAT(ak_tensor_map_unmappable(view(2048, 4096, 2), 0x10008), Catch::Contains("16-byte aligned"));
  CHECK_THAT(ak_tensor_map_unmappable(view(555, 7, 2), 0x10000), Catch::Contains("1110 bytes") && Catch::Contains("multiple of 16"));
  CHECK_THAT(ak_tensor_map_unmappable(view(0, 0, 2), 0x10000), Catch::Contains("empty"));
  CHECK_THAT(ak_tensor_map_unmappable(view(8, uint64_t(1) << 32, 2), 0x10000), Catch::Contains("2^32"));
}

TEST_CASE("a declaration's box, swizzle and L2 promotion are checked whatever the shape", "[tensor_map_rules]") {
  CHECK(ak_tensor_map_decl_problem(decl(0, 64, 128)).empty());
  CHECK_THAT(ak_tensor_map_decl_problem(decl(0, 64, 300)), Catch::Contains("1 to 256"));
  CHECK_THAT(ak_tensor_map_decl_problem(decl(0, 0, 64)), Catch::Contains("1 to 256"));
  CHECK_THAT(ak_tensor_map_decl_problem(decl(0, 64, 64, 48)), Catch::Contains("swizzle 48"));
  CHECK_THAT(ak_tensor_map_decl_problem(decl(0, 64, 64, 128, 32)), Catch::Contains("L2 promotion 32"));
  // 64 fp16 columns fill one 128-byte swizzle row; in fp32 they are twice as wide: no map in fp32.
  CHECK(ak_tensor_map_box_problem(decl(0, 64, 64), 2, "fp16").empty());
  CHECK_THAT(ak_tensor_map_box_problem(decl(0, 64, 64), 4, "fp32"), Catch::Contains("256 bytes in fp32, wider than the 128-byte swizzle"));
  CHECK_THAT(ak_tensor_map_box_problem(decl(0, 4, 64, 0), 2, "fp16"), Catch::Contains("8 bytes in fp16: it must be a multiple of 16"));
}

TEST_CASE("the driver gets the operand's dimensions, row stride, box, swizzle and L2 promotion, and each built map its bit", "[tensor_map_rules]") {
  calls.clear();
  answer = CUDA_SUCCESS;
  const ak_tensor_map_decl decls[] = {decl(0, 64, 128), decl(1, 32, 64, 64, 0), decl(3, 64, 64)};
  const ak_tensor_map_view views[] = {ak_tensor_map_view_of(2048, 4096 * 2048, 2, 2, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16),
                                      ak_tensor_map_view_of(2048, 6144 * 2048, 2, 2, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16),
                                      ak_tensor_map_view_of(7, 4096 * 7, 2, 2, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)};
  const CUdeviceptr bases[] = {0x100000, 0x200000, 0x300000};
  ak_tensor_maps_param p;
  int failed = -1;
  REQUIRE(ak_encode_tensor_maps(&fake_encode, decls, 3, views, bases, p, &failed) == CUDA_SUCCESS);
  // The third operand's rows are 14 bytes: no map, bit clear, all zero.
  CHECK(p.built == 0b011u);
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  CHECK(calls[0].rank == 2);
  CHECK(calls[0].base == reinterpret_cast<void*>(0x100000));
  CHECK((calls[0].dims[0] == 2048 && calls[0].dims[1] == 4096));
  CHECK(calls[0].stride == 4096);
  CHECK((calls[0].box[0] == 64 && calls[0].box[1] == 128));
  CHECK(calls[0].swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  CHECK(calls[0].l2 == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  CHECK(calls[1].dims[1] == 6144);
  CHECK(calls[1].box[0] == 32);
  CHECK(calls[1].swizzle == CU_TENSOR_MAP_SWIZZLE_64B);
  CHECK(calls[1].l2 == CU_TENSOR_MAP_L2_PROMOTION_NONE);
  const auto* built = reinterpret_cast<const unsigned char*>(&p.map[0]);
  const auto* unbuilt = reinterpret_cast<const unsigned char*>(&p.map[2]);
  CHECK(built[0] == 0xab);
  bool zero = true;
  for (size_t i = 0; i < sizeof p.map[2]; ++i) zero = zero && unbuilt[i] == 0;
  CHECK(zero);
}

TEST_CASE("a map the driver refuses is reported with its index and the driver's result", "[tensor_map_rules]") {
  calls.clear();
  answer = CUDA_ERROR_INVALID_VALUE;
  const ak_tensor_map_decl decls[] = {decl(0, 64, 128)};
  const ak_tensor_map_view views[] = {ak_tensor_map_view_of(2048, 4096 * 2048, 2, 2, CU_TENSOR_MAP_DATA_TYPE_FLOAT16)};
  const CUdeviceptr bases[] = {0x100000};
  ak_tensor_maps_param p;
  int failed = -1;
  CHECK(ak_encode_tensor_maps(&fake_encode, decls, 1, views, bases, p, &failed) == CUDA_ERROR_INVALID_VALUE);
  CHECK(failed == 0);
  answer = CUDA_SUCCESS;
}

TEST_CASE("the maps' parameter is the 1088 bytes the kernel contract documents, a map every 128 bytes", "[tensor_map_rules]") {
  CHECK(sizeof(ak_tensor_maps_param) == 1088);
  CHECK(offsetof(ak_tensor_maps_param, built) == 1024);
  CHECK(alignof(ak_tensor_map_bytes) == 64);
}
