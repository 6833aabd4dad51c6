#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "harness/gpu/host_dtype.hpp"
#include "harness/judging/compare.hpp"

using namespace ak;

TEST_CASE("outputs within atol + rtol * |expected| pass", "[compare]") {
  std::vector<float> expected{1.0f, -2.0f, 0.0f}, got{1.0f + 1.9e-5f, -2.0f - 2.9e-5f, 9e-6f};
  auto c = compare_output(got.data(), DType::F32, expected.data(), 3, {1e-5, 1e-5});
  CHECK(c.pass());
}

TEST_CASE("the worst element is reported with its index, value and expected value", "[compare]") {
  std::vector<float> expected{1, 1, 1, 1}, got{1, 1.5f, 1.01f, 1};
  auto c = compare_output(got.data(), DType::F32, expected.data(), 4, {1e-3, 1e-3});
  CHECK_FALSE(c.pass());
  CHECK(c.mismatched == 2);
  CHECK(c.worst_index == 1);
  CHECK(c.worst_got == 1.5f);
  CHECK(c.worst_expected == 1.0f);
  CHECK_THAT(c.describe(), Catch::Contains("2 of 4 elements wrong; worst at index 1"));
}

TEST_CASE("an element still holding the poison is counted as never written", "[compare]") {
  std::vector<uint16_t> got(1000);
  std::vector<float> expected(1000, 0.25f);
  for (auto& g : got) g = float_to_half(0.25f);
  got[700] = 0xFFFF;
  auto c = compare_output(got.data(), DType::F16, expected.data(), 1000, {1e-3, 1e-3});
  CHECK(c.unwritten == 1);
  CHECK(c.worst_index == 700);
  CHECK_THAT(c.describe(), Catch::Contains("1 never written"));
}

TEST_CASE("a NaN where a number is expected fails, a NaN where NaN is expected passes", "[compare]") {
  float nan = std::nanf("");
  std::vector<float> expected{1.0f, nan}, got{nan, std::nanf("1")};
  auto c = compare_output(got.data(), DType::F32, expected.data(), 2, {1e-5, 1e-5});
  CHECK(c.mismatched == 1);
  CHECK(c.worst_index == 0);
}

TEST_CASE("a result past the dtype's range is expected as infinity, as the dtype rounds it", "[compare]") {
  std::vector<float> expected{3.2e6f, 1.0f};
  std::vector<uint16_t> got{float_to_half(3.2e6f), float_to_half(1.0f)};   // fp16: +inf, 1
  CHECK(compare_output(got.data(), DType::F16, expected.data(), 2, {1e-2, 1e-2}).pass());
  got[0] = float_to_half(65504.0f);                                         // a clamp is wrong
  CHECK_FALSE(compare_output(got.data(), DType::F16, expected.data(), 2, {1e-2, 1e-2}).pass());
}

TEST_CASE("the comparison is in the output dtype, and one unit in the last place always passes", "[compare]") {
  // bf16 near 2 has a spacing of 2^-6: a correct kernel may land on either neighbour of the fp32
  // reference, which a 2e-3 tolerance alone would call wrong.
  std::vector<float> expected{2.03901f};
  std::vector<uint16_t> got{float_to_bf16(2.03125f)};
  CHECK(compare_output(got.data(), DType::BF16, expected.data(), 1, {2e-3, 2e-3}).pass());
  got[0] = float_to_bf16(2.0f);   // two units away
  CHECK_FALSE(compare_output(got.data(), DType::BF16, expected.data(), 1, {2e-3, 2e-3}).pass());
  // At the top of fp16's range the unit is the step below, not the infinite one above.
  std::vector<float> top{65504.0f};
  std::vector<uint16_t> far{float_to_half(60000.0f)};
  CHECK_FALSE(compare_output(far.data(), DType::F16, top.data(), 1, {1e-3, 1e-3}).pass());
}

TEST_CASE("comparison over millions of elements finds the single bad one", "[compare]") {
  const int64_t n = 5'000'000;
  std::vector<float> expected(n, 2.0f), got(n, 2.0f);
  got[4'999'999] = 2.1f;
  auto c = compare_output(got.data(), DType::F32, expected.data(), n, {1e-4, 1e-4});
  CHECK(c.mismatched == 1);
  CHECK(c.worst_index == 4'999'999);
}

TEST_CASE("a sampled comparison checks only the sampled rows and names the index in the whole output", "[compare]") {
  // 4 rows of 3; rows 1 and 3 sampled; row 3 column 2 is wrong, row 0 is garbage but not sampled.
  std::vector<float> got{9, 9, 9, 1, 2, 3, 0, 0, 0, 4, 5, 7};
  std::vector<float> expected{1, 2, 3, 4, 5, 6};
  auto c = compare_rows(got.data(), DType::F32, expected.data(), {1, 3}, 3, {1e-3, 1e-3});
  CHECK(c.elements == 6);
  CHECK(c.mismatched == 1);
  CHECK(c.worst_index == 3 * 3 + 2);
  CHECK(c.worst_got == 7);
  got[11] = 6;
  CHECK(compare_rows(got.data(), DType::F32, expected.data(), {1, 3}, 3, {1e-3, 1e-3}).pass());
}
