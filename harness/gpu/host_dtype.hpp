#pragma once
/// Buffers of any dtype on the host: reading and writing elements as float (the conversions are
/// common/half_precision.hpp's), so the harness can make inputs and read outputs.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/half_precision.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// Reads element i of a buffer of dtype d as float.
inline float load_as_float(const void* data, DType d, size_t i) {
  if (d == DType::F32) return static_cast<const float*>(data)[i];
  uint16_t v = static_cast<const uint16_t*>(data)[i];
  return d == DType::F16 ? half_to_float(v) : bf16_to_float(v);
}

/// Writes a float as element i of a buffer of dtype d (rounded to nearest even).
inline void store_from_float(void* data, DType d, size_t i, float v) {
  if (d == DType::F32) {
    static_cast<float*>(data)[i] = v;
    return;
  }
  static_cast<uint16_t*>(data)[i] = d == DType::F16 ? float_to_half(v) : float_to_bf16(v);
}

/// The largest finite value of a dtype.
inline float dtype_max(DType d) { return d == DType::F16 ? 65504.0f : d == DType::BF16 ? 3.3895314e38f : 3.4028235e38f; }

}  // namespace ak
