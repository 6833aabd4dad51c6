#pragma once
/// Tensor maps (TMA descriptors) over a candidate's own operands, encoded by the harness for each
/// call. A kernel file declares them as `ak_tensor_maps` rows {operand, box_cols, box_rows,
/// swizzle, l2_promotion}; the entry point then takes one more parameter, the maps of the call
/// and a bit per map that was built. A map can only cover its operand's bytes and carries nothing
/// from one launch to the next, so TMA opens no way around the contract (docs/kernel-contract.md).
#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "harness/cuda_driver.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

inline constexpr const char* kTensorMapsSymbol = "ak_tensor_maps";
inline constexpr int kMaxTensorMaps = 8;
inline constexpr int kTensorMapFields = 5;

/// One map a file declares.
struct TensorMapDecl {
  int operand = 0;       ///< index of a buffer argument of the entry point
  int box_cols = 0;      ///< elements along the operand's rows (the inner dimension)
  int box_rows = 0;      ///< rows of the box
  int swizzle = 0;       ///< bytes: 0, 32, 64 or 128
  int l2_promotion = 0;  ///< bytes: 0, 64, 128 or 256
};

/// The last parameter of an entry point that declares maps: the file defines the same layout
/// (`struct ak_tensor_map_args { ak_tensor_map map[8]; unsigned int built; }`, 1088 bytes).
/// A map is 128 bytes that TMA wants 64-byte aligned (cuda.h's CUtensorMap asks 128, which would
/// make the parameter 1152 bytes): the maps are copied out of CUtensorMap into this layout.
struct alignas(64) TensorMapBytes {
  uint64_t opaque[16];
};
struct TensorMapsParam {
  TensorMapBytes map[kMaxTensorMaps];
  uint32_t built = 0;   ///< bit i: map i was encoded for this call; else map i is all zero
};
static_assert(sizeof(TensorMapsParam) == 1088, "the parameter layout the contract documents");

/// Reads the ints of ak_tensor_maps into declarations and checks each against the spec and every
/// rule that holds whatever the shape: an Error names the map, the field and the rule.
Result<std::vector<TensorMapDecl>> parse_tensor_maps(const std::vector<int>& ints, const KernelSpec& spec);

/// How a map sees its operand in one call: a row-major matrix of `rows` x `cols` elements.
struct TensorMapView {
  uint64_t cols = 0, rows = 0;
  size_t elem_bytes = 0;
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
};
TensorMapView tensor_map_view(const KernelSpec& spec, const TensorMapDecl& decl, const Shape& shape, DType d);

/// Why the map cannot be built for this call ("" when it can): TMA needs a 16-byte-aligned base,
/// a row stride that is a multiple of 16 bytes and dimensions below 2^32.
std::string unmappable_reason(const TensorMapView& view, CUdeviceptr base);

/// The parameter for one call: each map whose operand can be mapped, encoded over `operands[i]`
/// (the device address of each argument of the entry point, 0 for non-buffers); the others zero
/// with their bit clear, so the file takes its own fallback path. An Error when the driver refuses
/// a map the checks above let through (naming the map and the shape).
Result<TensorMapsParam> encode_tensor_maps(const CudaDriver& driver, const std::vector<TensorMapDecl>& decls,
                                           const KernelSpec& spec, const Shape& shape, DType d,
                                           const std::vector<CUdeviceptr>& operands);

}  // namespace ak
