#include "kernels_cuda/matmul/split_tf32.hpp"

#include <cstdint>
#include <cstring>

namespace ak::split_tf32 {

float round_tf32(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u) return v;   // infinity or NaN
  // Half of the 13 dropped bits' weight added to the magnitude, then the bits cut: to nearest,
  // ties away from zero; a carry into the exponent is the correct rounding up.
  u = (u + 0x1000u) & ~0x1FFFu;
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

Parts split(float v) {
  const float big = round_tf32(v);
  return {big, round_tf32(v - big)};
}

float dot_split(const float* a, const float* b, size_t n) {
  float acc = 0.f;
  for (size_t i = 0; i < n; ++i) {
    const Parts x = split(a[i]), y = split(b[i]);
    acc += x.small * y.big;
    acc += x.big * y.small;
    acc += x.big * y.big;
  }
  return acc;
}

float dot_tf32(const float* a, const float* b, size_t n) {
  float acc = 0.f;
  for (size_t i = 0; i < n; ++i) acc += round_tf32(a[i]) * round_tf32(b[i]);
  return acc;
}

}  // namespace ak::split_tf32
