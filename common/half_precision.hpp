#pragma once
/// fp16 and bf16 on the host, bit-exact with CUDA's round-to-nearest-even conversions: for the
/// harness's buffers and for CPU references that must round as a kernel's output does.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ak {

inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (man << 13);
  } else if (exp == 0) {
    float f = std::ldexp(float(man), -24);  // subnormal (or zero)
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7fffffff;
  if (ax >= 0x7f800000) return sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 : 0);  // inf / nan
  if (ax >= 0x477ff000) return sign | 0x7c00;                                    // overflows to inf
  if (ax < 0x38800000) {  // subnormal half: round |f| / 2^-24 to an integer, ties to even
    float a;
    std::memcpy(&a, &ax, 4);
    return sign | uint16_t(std::nearbyint(a * 16777216.0f));
  }
  uint32_t rounded = ax + 0xfff + ((ax >> 13) & 1);  // round to nearest even on bit 13
  return sign | uint16_t((rounded - (112u << 23)) >> 13);
}

inline float bf16_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);  // quiet nan
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

}  // namespace ak
