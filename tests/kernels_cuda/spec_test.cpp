#include <catch2/catch.hpp>

#include <cmath>

#include "kernels_cuda/registry.hpp"

using namespace ak;

TEST_CASE("bytes and flops formulas on known shapes", "[spec]") {
  // rmsnorm reads x and weight and writes y.
  CHECK(rmsnorm_spec().bytes({8192, 8192}, DType::F16) == 2.0 * (2 * 8192.0 * 8192 + 8192));
  CHECK(rmsnorm_spec().bytes({10, 100}, DType::F32) == 4.0 * (2 * 1000 + 100));
  CHECK(softmax_spec().bytes({8192, 8192}, DType::BF16) == 2.0 * 2 * 8192 * 8192);
  CHECK(softmax_spec().flops({2, 3}) == 30);
}

TEST_CASE("each spec has 8 to 10 sweep shapes, edge shapes off the vector width, and tolerances no looser than DESIGN.md", "[spec]") {
  for (auto* s : all_specs()) {
    INFO(s->type);
    CHECK(s->sweep_shapes.size() >= 8);
    CHECK(s->sweep_shapes.size() <= 10);
    bool odd = false, one_row = false, long_row = false;
    for (auto& e : s->edge_shapes) {
      odd |= s->cols(e) % 8 != 0;
      one_row |= s->rows(e) == 1;
      long_row |= s->cols(e) >= 65536;
    }
    CHECK(odd);
    CHECK(one_row);
    CHECK(long_row);
    CHECK(s->dtypes.size() == 3);
    CHECK_FALSE(s->starter_source().empty());
  }
  CHECK(softmax_spec().tolerance(DType::F16).atol <= 1e-3);
  CHECK(softmax_spec().tolerance(DType::BF16).atol <= 2e-3);
  CHECK(softmax_spec().tolerance(DType::F32).atol <= 1e-5);
  CHECK(rmsnorm_spec().tolerance(DType::F16).atol <= 1e-2);
  CHECK(rmsnorm_spec().tolerance(DType::F32).rtol <= 1e-4);
}

TEST_CASE("the CPU rotary reference rotates each pair of halves by its position's angle", "[spec]") {
  // One row of head_dim 4 at position 0: pairs (q0, q2) and (q1, q3) rotated by (cos, sin).
  std::vector<double> q{1, 2, 3, 4}, cos{0.5, 0}, sin{0.25, 1};
  auto y = rotary_embedding_spec().cpu_reference({1, 1, 1, 4}, {q, cos, sin})[0];
  CHECK(y[0] == Approx(1 * 0.5 - 3 * 0.25));
  CHECK(y[2] == Approx(3 * 0.5 + 1 * 0.25));
  CHECK(y[1] == Approx(2 * 0 - 4 * 1));
  CHECK(y[3] == Approx(4 * 0 + 2 * 1));
  CHECK(rotary_embedding_spec().bytes({4, 32, 4096, 128}, DType::F16) == 2.0 * (2.0 * 4 * 32 * 4096 * 128 + 2.0 * 4096 * 64));
}

TEST_CASE("the CPU softmax reference sums to one per row and is shift-invariant", "[spec]") {
  std::vector<double> x{1, 2, 3, 1000, 1000, 1000};
  auto y = softmax_spec().cpu_reference({2, 3}, {x})[0];
  CHECK(y[0] + y[1] + y[2] == Approx(1.0));
  CHECK(y[3] == Approx(1.0 / 3));
  CHECK(y[2] / y[1] == Approx(std::exp(1.0)));
}

TEST_CASE("the CPU rmsnorm reference gives unit RMS before the weight", "[spec]") {
  std::vector<double> x{3, 4, 0, 0}, w{1, 1, 1, 1};
  auto y = rmsnorm_spec().cpu_reference({1, 4}, {x, w})[0];
  // mean square 25/4, rms 2.5
  CHECK(y[0] == Approx(3 / 2.5).epsilon(1e-6));
  CHECK(y[1] == Approx(4 / 2.5).epsilon(1e-6));
}

TEST_CASE("shapes print and parse", "[spec]") {
  CHECK(shape_str({8192, 4096}) == "8192x4096");
  CHECK(parse_shape("8192x4096") == Shape{8192, 4096});
  CHECK(parse_shape("4,32,4096") == Shape{4, 32, 4096});
  CHECK_FALSE(parse_shape("8192x").has_value());
  CHECK_FALSE(parse_shape("-1x2").has_value());
}
