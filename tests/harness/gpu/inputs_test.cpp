#include <catch2/catch.hpp>

#include <cmath>

#include "harness/gpu/host_dtype.hpp"
#include "harness/gpu/inputs.hpp"

using namespace ak;

namespace {
std::vector<float> as_floats(const std::vector<char>& b, DType d) {
  std::vector<float> v(b.size() / dtype_size(d));
  for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_float(b.data(), d, i);
  return v;
}
}  // namespace

TEST_CASE("the same seed gives the same inputs, and another seed other inputs", "[inputs]") {
  auto a = make_input(DType::F16, 300000, 1000, Fill::Data, Recipe::Normal, 7);
  auto b = make_input(DType::F16, 300000, 1000, Fill::Data, Recipe::Normal, 7);
  auto c = make_input(DType::F16, 300000, 1000, Fill::Data, Recipe::Normal, 8);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("normal inputs are centred with unit spread and never all zero", "[inputs]") {
  auto v = as_floats(make_input(DType::F32, 100000, 100, Fill::Data, Recipe::Normal, 1), DType::F32);
  double sum = 0, sq = 0;
  for (float x : v) sum += x, sq += double(x) * x;
  CHECK(std::fabs(sum / v.size()) < 0.02);
  CHECK(sq / v.size() == Approx(1.0).epsilon(0.05));
}

TEST_CASE("weights are uniform in [0.5, 1.5]", "[inputs]") {
  for (float w : as_floats(make_input(DType::BF16, 5000, 5000, Fill::Weight, Recipe::Normal, 3), DType::BF16)) {
    REQUIRE(w >= 0.5f);
    REQUIRE(w <= 1.5f);
  }
}

TEST_CASE("adversarial recipes draw what they say", "[inputs]") {
  const int64_t cols = 64, n = cols * 10;
  auto near_max = as_floats(make_input(DType::F16, n, cols, Fill::Data, Recipe::NearMax, 1), DType::F16);
  for (float x : near_max) {
    REQUIRE(std::fabs(x) >= 32000.0f);
    REQUIRE(std::fmod(x, 32.0f) == 0.0f);
  }
  auto tiny = as_floats(make_input(DType::F16, n, cols, Fill::Data, Recipe::Tiny, 1), DType::F16);
  for (float x : tiny) REQUIRE(std::fabs(x) < 6.2e-5f);  // below fp16's smallest normal
  auto constant = as_floats(make_input(DType::F32, n, cols, Fill::Data, Recipe::ConstantRows, 1), DType::F32);
  for (int64_t i = 0; i < n; ++i) REQUIRE(constant[i] == constant[(i / cols) * cols]);
  auto huge = as_floats(make_input(DType::F32, n, cols, Fill::Data, Recipe::OneHuge, 1), DType::F32);
  for (int64_t r = 0; r < 10; ++r) {
    int big = 0;
    for (int64_t c = 0; c < cols; ++c) big += std::fabs(huge[r * cols + c]) == 60000.0f;
    REQUIRE(big == 1);
  }
  auto mixed = as_floats(make_input(DType::F32, n, cols, Fill::Data, Recipe::MixedSigns, 1), DType::F32);
  for (int64_t i = 0; i + 1 < n; ++i) REQUIRE((mixed[i] < 0) != (mixed[i + 1] < 0));
}

TEST_CASE("class indices are int64 below the class count, cover every class, and repeat with the seed", "[inputs]") {
  auto bytes = make_input(DType::F16, 20000, 37, Fill::ClassIndex, Recipe::NearMax, 5);
  REQUIRE(bytes.size() == 20000 * sizeof(int64_t));  // int64 whatever the dtype under test
  const auto* idx = reinterpret_cast<const int64_t*>(bytes.data());
  std::vector<int> seen(37, 0);
  for (int i = 0; i < 20000; ++i) {
    REQUIRE(idx[i] >= 0);
    REQUIRE(idx[i] < 37);
    ++seen[size_t(idx[i])];
  }
  for (int count : seen) CHECK(count > 0);
  CHECK(bytes == make_input(DType::BF16, 20000, 37, Fill::ClassIndex, Recipe::Normal, 5));
}

TEST_CASE("a fan-in weight is the data values times its scale", "[inputs]") {
  auto plain = as_floats(make_input(DType::F32, 4096, 64, Fill::Data, Recipe::Normal, 9), DType::F32);
  auto scaled = as_floats(make_input(DType::F32, 4096, 64, Fill::FanIn, Recipe::Normal, 9, 0.125f), DType::F32);
  for (size_t i = 0; i < plain.size(); ++i) REQUIRE(scaled[i] == plain[i] * 0.125f);
}

TEST_CASE("large values are normal values sixteen times over", "[inputs]") {
  auto v = as_floats(make_input(DType::F32, 100000, 100, Fill::Data, Recipe::Large, 1), DType::F32);
  double sq = 0;
  for (float x : v) sq += double(x) * x;
  CHECK(std::sqrt(sq / v.size()) == Approx(16.0).epsilon(0.05));
}

TEST_CASE("plain data ignores the run's recipe", "[inputs]") {
  CHECK(make_input(DType::F16, 5000, 50, Fill::PlainData, Recipe::NearMax, 4) ==
        make_input(DType::F16, 5000, 50, Fill::Data, Recipe::Normal, 4));
}
