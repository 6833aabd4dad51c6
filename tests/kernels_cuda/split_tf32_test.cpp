// The split-TF32 arithmetic of matmul's fp32 files, modelled on the host: how close it comes to
// double precision, against TF32 alone and plain fp32.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernels_cuda/matmul/split_tf32.hpp"

using namespace ak::split_tf32;

TEST_CASE("round_tf32 keeps 10 bits of mantissa, to nearest with ties away from zero", "[split_tf32]") {
  CHECK(round_tf32(1.0f) == 1.0f);
  CHECK(round_tf32(1.0f + 0x1p-10f) == 1.0f + 0x1p-10f);     // the last bit TF32 keeps
  CHECK(round_tf32(1.0f + 0x1p-12f) == 1.0f);                 // below half a unit: down
  CHECK(round_tf32(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f);     // a tie: away from zero
  CHECK(round_tf32(-1.0f - 0x1p-11f) == -1.0f - 0x1p-10f);
  CHECK(round_tf32(2.0f - 0x1p-23f) == 2.0f);                 // the carry reaches the exponent
  CHECK(std::isinf(round_tf32(INFINITY)));
  CHECK(std::isnan(round_tf32(NAN)));
}

TEST_CASE("big plus small gives back an fp32 value within 2^-21 of it", "[split_tf32]") {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int i = 0; i < 10000; ++i) {
    const float v = normal(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);
    const Parts p = split(v);
    CHECK(round_tf32(p.big) == p.big);
    CHECK(round_tf32(p.small) == p.small);
    CHECK(std::fabs(p.small) <= std::fabs(v) * 0x1p-11f);
    INFO("v = " << v << ", big = " << p.big << ", small = " << p.small);
    CHECK(std::fabs(double(p.big) + double(p.small) - double(v)) <= std::fabs(double(v)) * 0x1p-21);
  }
}

TEST_CASE("a split-TF32 dot product agrees with double precision far better than TF32, as well as fp32", "[split_tf32]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (size_t n : {64u, 1024u, 4096u}) {
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = normal(rng);
      b[i] = normal(rng) / std::sqrt(float(n));   // a weight's scale: the sum is of order one
    }
    double exact = 0, magnitude = 0;
    float fp32 = 0;
    for (size_t i = 0; i < n; ++i) {
      exact += double(a[i]) * double(b[i]);
      magnitude += std::fabs(double(a[i]) * double(b[i]));
      fp32 = std::fma(a[i], b[i], fp32);
    }
    const double err_split = std::fabs(dot_split(a.data(), b.data(), n) - exact) / magnitude;
    const double err_tf32 = std::fabs(dot_tf32(a.data(), b.data(), n) - exact) / magnitude;
    const double err_fp32 = std::fabs(fp32 - exact) / magnitude;
    INFO("n " << n << ": relative errors split " << err_split << ", tf32 " << err_tf32 << ", fp32 " << err_fp32);
    CHECK(err_split * 50 < err_tf32);
    CHECK(err_split < 4 * err_fp32 + 1e-7);
    CHECK(err_split < 1e-5);   // KernelBench's fp32 tolerance is 1e-4
  }
}
