#include <catch2/catch.hpp>

#include "harness/gpu/host_dtype.hpp"

using namespace ak;

TEST_CASE("fp16 conversions round to nearest even and keep specials", "[dtype]") {
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(float_to_half(65520.0f) == 0x7C00);            // rounds to infinity
  CHECK(float_to_half(5.960464477539063e-08f) == 0x0001);  // smallest subnormal
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3C00);     // a tie rounds to even
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3C02);
  CHECK(std::isnan(half_to_float(0xFFFF)));
  for (uint32_t h = 0; h < 0x7C00; ++h) REQUIRE(float_to_half(half_to_float(uint16_t(h))) == h);
}

TEST_CASE("bf16 conversions round to nearest even", "[dtype]") {
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(bf16_to_float(0x3F80) == 1.0f);
  CHECK(float_to_bf16(1.0f + 1.0f / 256) == 0x3F80);      // tie to even
  CHECK(float_to_bf16(1.0f + 3.0f / 256) == 0x3F82);
  CHECK(std::isnan(bf16_to_float(0xFFFF)));
}

TEST_CASE("load and store go through the buffer's dtype", "[dtype]") {
  uint16_t h[2];
  store_from_float(h, DType::F16, 1, 0.5f);
  CHECK(load_as_float(h, DType::F16, 1) == 0.5f);
  float f[1];
  store_from_float(f, DType::F32, 0, 0.1f);
  CHECK(load_as_float(f, DType::F32, 0) == 0.1f);
}
