// The tensor-map (TMA) rules, as plain C++ over cuda.h with no autokernel type, so that one text
// serves two places: the harness (harness/module/tensor_maps.cpp), which encodes the maps a candidate
// declares for every call it judges, and the launchers `autokernel export` writes, which copy this
// file. An exported op thus hands its kernel the very maps the harness did for the same call: the
// same view of each operand, the same refusals (the file then takes its own fallback path, as it
// did when judged), the same box, swizzle and L2 promotion, the same 1088-byte parameter.
// Nothing here allocates or keeps state: a map covers its operand's bytes for one call only.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

/// One map a kernel file declares: a row {operand, box_cols, box_rows, swizzle, l2_promotion} of
/// its `extern "C" __constant__ int ak_tensor_maps[N][5]`.
struct ak_tensor_map_decl {
  int operand = 0;       ///< index of a buffer argument of the entry point
  int box_cols = 0;      ///< elements along the operand's rows (the inner dimension)
  int box_rows = 0;      ///< rows of the box
  int swizzle = 0;       ///< bytes: 0, 32, 64 or 128
  int l2_promotion = 0;  ///< bytes: 0, 64, 128 or 256
};

constexpr int ak_max_tensor_maps = 8;
constexpr int ak_tensor_map_fields = 5;

/// The last parameter of an entry point that declares maps; the file defines the same layout
/// (`struct ak_tensor_map_args { ak_tensor_map map[8]; unsigned int built; }`, 1088 bytes). A map
/// is 128 bytes that TMA wants 64-byte aligned (cuda.h's CUtensorMap asks 128, which would make
/// the parameter 1152 bytes): the maps are copied out of CUtensorMap into this layout.
struct alignas(64) ak_tensor_map_bytes {
  uint64_t opaque[16];
};
struct ak_tensor_maps_param {
  ak_tensor_map_bytes map[ak_max_tensor_maps];
  uint32_t built = 0;  ///< bit i: map i was encoded for this call; else map i is all zero
};
static_assert(sizeof(ak_tensor_maps_param) == 1088, "the parameter layout docs/kernel-contract.md documents");
static_assert(sizeof(CUtensorMap) == sizeof(ak_tensor_map_bytes), "a map is 128 bytes");

/// How a map sees its operand in one call: a row-major matrix of `rows` x `cols` elements of
/// `elem_bytes` each, of TMA type `type`.
struct ak_tensor_map_view {
  uint64_t cols = 0, rows = 0;
  size_t elem_bytes = 0;
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
};

/// The view of an operand of `numel` stored elements of `stored_bytes` each, read by the map as
/// rows of `cols` elements of `mapped_bytes` each (a scratch of floats a kernel keeps in fp16 is
/// twice as many mapped rows).
inline ak_tensor_map_view ak_tensor_map_view_of(uint64_t cols, uint64_t numel, size_t stored_bytes, size_t mapped_bytes,
                                                CUtensorMapDataType type) {
  ak_tensor_map_view v;
  v.cols = cols;
  v.elem_bytes = mapped_bytes;
  v.type = type;
  v.rows = cols && mapped_bytes ? numel * stored_bytes / (cols * mapped_bytes) : 0;
  return v;
}

/// The TMA type of an operand mapped in the call's dtype (code 0 fp16, 1 bf16, 2 fp32).
inline CUtensorMapDataType ak_tensor_map_type_of_dtype(int dtype_code) {
  return dtype_code == 0 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
         : dtype_code == 1 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

/// Why the box, swizzle or L2 promotion of `m` can hold for no call ("" when they can): each box
/// side 1 to 256, a swizzle of 0, 32, 64 or 128 bytes, an L2 promotion of 0, 64, 128 or 256 bytes.
inline std::string ak_tensor_map_decl_problem(const ak_tensor_map_decl& m) {
  if (m.box_cols < 1 || m.box_cols > 256 || m.box_rows < 1 || m.box_rows > 256)
    return "the box is " + std::to_string(m.box_cols) + " x " + std::to_string(m.box_rows) + ": each side must be 1 to 256";
  if (m.swizzle != 0 && m.swizzle != 32 && m.swizzle != 64 && m.swizzle != 128)
    return "swizzle " + std::to_string(m.swizzle) + ": expected 0, 32, 64 or 128 bytes";
  if (m.l2_promotion != 0 && m.l2_promotion != 64 && m.l2_promotion != 128 && m.l2_promotion != 256)
    return "L2 promotion " + std::to_string(m.l2_promotion) + ": expected 0, 64, 128 or 256 bytes";
  return "";
}

/// Why the box of `m` cannot be built over elements of `elem_bytes` ("" when it can): a box row
/// must be a multiple of 16 bytes and fit the swizzle span. A box that fits some of a type's
/// dtypes is built in those only (matmul's 64 columns of K are one 128-byte swizzle row in fp16,
/// two in fp32), so this is asked per call; `dtype` names the dtype in the message.
inline std::string ak_tensor_map_box_problem(const ak_tensor_map_decl& m, size_t elem_bytes, const std::string& dtype) {
  const size_t row_bytes = size_t(m.box_cols) * elem_bytes;
  if (row_bytes % 16)
    return "a box row is " + std::to_string(row_bytes) + " bytes in " + dtype + ": it must be a multiple of 16";
  if (m.swizzle && row_bytes > size_t(m.swizzle))
    return "a box row is " + std::to_string(row_bytes) + " bytes in " + dtype + ", wider than the " +
           std::to_string(m.swizzle) + "-byte swizzle span";
  return "";
}

/// Why the map cannot be built for this call ("" when it can): TMA needs a 16-byte-aligned base,
/// a row stride that is a multiple of 16 bytes and dimensions below 2^32.
inline std::string ak_tensor_map_unmappable(const ak_tensor_map_view& v, CUdeviceptr base) {
  if (v.cols == 0 || v.rows == 0) return "the operand is empty";
  if (base % 16) return "its base address is not 16-byte aligned";
  if ((v.cols * v.elem_bytes) % 16)
    return "its row stride (" + std::to_string(v.cols * v.elem_bytes) + " bytes) is not a multiple of 16 bytes";
  if (v.cols >= (uint64_t(1) << 32) || v.rows >= (uint64_t(1) << 32)) return "a dimension reaches 2^32";
  if (v.cols * v.elem_bytes >= (uint64_t(1) << 40)) return "its row stride reaches 2^40 bytes";
  return "";
}

inline CUtensorMapSwizzle ak_tensor_map_swizzle(int bytes) {
  switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

inline CUtensorMapL2promotion ak_tensor_map_l2(int bytes) {
  switch (bytes) {
    case 64: return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    case 128: return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    case 256: return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    default: return CU_TENSOR_MAP_L2_PROMOTION_NONE;
  }
}

/// The parameter for one call: map i encoded over `views[i]` at `bases[i]` where its box fits the
/// view's element size and the view is mappable (bit i set), all zero with bit i clear otherwise,
/// so the file takes its own fallback path. `encode` is the driver's cuTensorMapEncodeTiled. On a
/// refusal the checks let through (the driver's), its result, with `*failed` = the map's index.
template <class Encode>
inline CUresult ak_encode_tensor_maps(Encode encode, const ak_tensor_map_decl* decls, int count,
                                      const ak_tensor_map_view* views, const CUdeviceptr* bases,
                                      ak_tensor_maps_param& out, int* failed) {
  std::memset(static_cast<void*>(&out), 0, sizeof out);  // every byte, padding included
  for (int i = 0; i < count && i < ak_max_tensor_maps; ++i) {
    const ak_tensor_map_decl& m = decls[i];
    const ak_tensor_map_view& v = views[i];
    if (!ak_tensor_map_box_problem(m, v.elem_bytes, "").empty()) continue;  // not in this dtype
    if (!ak_tensor_map_unmappable(v, bases[i]).empty()) continue;
    const cuuint64_t dims[2] = {v.cols, v.rows};
    const cuuint64_t strides[1] = {v.cols * v.elem_bytes};
    const cuuint32_t box[2] = {cuuint32_t(m.box_cols), cuuint32_t(m.box_rows)};
    const cuuint32_t unit[2] = {1, 1};
    CUtensorMap encoded;
    const CUresult r = encode(&encoded, v.type, 2, reinterpret_cast<void*>(bases[i]), dims, strides, box, unit,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, ak_tensor_map_swizzle(m.swizzle),
                              ak_tensor_map_l2(m.l2_promotion), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      if (failed) *failed = i;
      return r;
    }
    std::memcpy(&out.map[i], &encoded, sizeof encoded);
    out.built |= 1u << i;
  }
  return CUDA_SUCCESS;
}
