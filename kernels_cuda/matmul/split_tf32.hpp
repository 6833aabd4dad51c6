#pragma once
/// The arithmetic of fp32 on the tensor cores (split TF32), on the host: each operand is split into
/// a TF32 part and the TF32 rounding of the rest, and each product is taken as big*big + big*small
/// + small*big. The tests hold it against double precision and against matmul's in-order fp32
/// reference without a GPU: accurate, yet not the reference's order, which fp32's check needs on
/// one-huge-per-row inputs (why matmul's fp32 files sum on the CUDA cores, in that order).
#include <cstddef>

namespace ak::split_tf32 {

/// v rounded to TF32 as `cvt.rna.tf32.f32` rounds it: 10 bits of mantissa, to nearest, ties away
/// from zero, in fp32's exponent range; infinities and NaN unchanged.
float round_tf32(float v);

struct Parts {
  float big;    ///< round_tf32(v)
  float small;  ///< round_tf32(v - big): what big leaves out, itself rounded to TF32
};
Parts split(float v);

/// sum_i a[i] b[i] as a split-TF32 kernel computes it: per term small_a*big_b + big_a*small_b +
/// big_a*big_b (each product of two TF32 values is exact in fp32), added in that order into an
/// fp32 sum, term after term.
float dot_split(const float* a, const float* b, size_t n);
/// The same with TF32 alone: one product round_tf32(a) * round_tf32(b) per term.
float dot_tf32(const float* a, const float* b, size_t n);

}  // namespace ak::split_tf32
