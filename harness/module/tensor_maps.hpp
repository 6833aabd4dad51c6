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
#include "harness/gpu/cuda_driver.hpp"
#include "kernels_cuda/spec.hpp"
#include "kernels_cuda/tensor_map_rules.h"

namespace ak {

inline constexpr const char* kTensorMapsSymbol = "ak_tensor_maps";
inline constexpr int kMaxTensorMaps = ak_max_tensor_maps;
inline constexpr int kTensorMapFields = ak_tensor_map_fields;

/// One map a file declares, and the parameter of one call (kernels_cuda/tensor_map_rules.h: the
/// rules an exported launcher copies).
using TensorMapDecl = ak_tensor_map_decl;
using TensorMapBytes = ak_tensor_map_bytes;
using TensorMapsParam = ak_tensor_maps_param;

/// Reads the ints of ak_tensor_maps into declarations and checks each against the spec and every
/// rule that holds whatever the shape: an Error names the map, the field and the rule.
Result<std::vector<TensorMapDecl>> parse_tensor_maps(const std::vector<int>& ints, const KernelSpec& spec);

/// How a map sees its operand in one call: a row-major matrix of `rows` x `cols` elements.
using TensorMapView = ak_tensor_map_view;
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
