// The part of the reference's outputs that needs no GPU: how a sampled validation picks its rows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "harness/judging/reference_outputs.hpp"

using namespace ak;

TEST_CASE("sampled validation takes every row of a small output", "[reference_outputs]") {
  CHECK(pick_sample_rows(5, 64, 1) == std::vector<int32_t>{0, 1, 2, 3, 4});
}

TEST_CASE("sampled rows are distinct and sorted, always hold the first and last, and change with the seed", "[reference_outputs]") {
  auto a = pick_sample_rows(524288, 256, 7), b = pick_sample_rows(524288, 256, 8);
  REQUIRE(a.size() == 256);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(std::set<int32_t>(a.begin(), a.end()).size() == 256);
  CHECK(a.front() == 0);
  CHECK(a.back() == 524287);
  CHECK(a != b);
  CHECK(a == pick_sample_rows(524288, 256, 7));
}
