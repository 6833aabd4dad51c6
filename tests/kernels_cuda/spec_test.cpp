#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "kernels_cuda/registry.hpp"

using namespace ak;

TEST_CASE("bytes and flops formulas of the new types on their benchmark shapes", "[spec]") {
  // cross_entropy reads the logits (of the rows not ignored, tests/kernels_cuda/cross_entropy_test.cpp)
  // and the int64 targets and writes a loss per row and the mean.
  CHECK(cross_entropy_v1_spec().bytes({8192, 32768}, DType::F16) == 2.0 * (8192.0 * 32768 + 8192 + 1) + 8.0 * 8192);
  CHECK(matmul_v1_spec().flops({4096, 4096, 4096}) == 2.0 * 4096 * 4096 * 4096);
  CHECK(matmul_v1_spec().bytes({2, 3, 5}, DType::BF16) == 2.0 * (2 * 5 + 5 * 3 + 2 * 3));
  // Causal attention: half of 4·B·H·S²·D (version 2's, grouped heads and both masks:
  // tests/kernels_cuda/flash_attention_test.cpp).
  CHECK(flash_attention_v1_spec().flops({4, 32, 4096, 128}) == 2.0 * 4 * 32 * 4096.0 * 4096 * 128);
  CHECK(flash_attention_v1_spec().bytes({1, 2, 3, 64}, DType::F16) == 2.0 * 4 * 2 * 3 * 64);
  // SwiGLU: three GEMMs of M·K·I multiply-adds; x and out, and three weight matrices.
  CHECK(fused_mlp_spec().flops({4096, 4096, 11008}) == 6.0 * 4096 * 4096 * 11008);
  CHECK(fused_mlp_spec().bytes({4, 8, 16}, DType::F16) == 2.0 * (2 * 4 * 8 + 3 * 8 * 16));
}

TEST_CASE("the grids of the tiled types cover their outputs with the exported tiles", "[spec]") {
  LaunchGeometry g{128, 1, 64, 32};
  CHECK(matmul_spec().grid({100, 100, 7, 0}, g) == 2 * 4);
  CHECK(flash_attention_v1_spec().grid({2, 3, 65, 64}, g) == 2 * 3 * 2);
  CHECK(flash_attention_spec().grid({2, 3, 1, 65, 64, 1, 2}, g) == 2 * 3 * 2);
  // fused_mlp: the gate/up tiles over [M, I], then the down tiles over [M, K].
  CHECK(fused_mlp_spec().grid({65, 64, 100}, g) == 2 * 4 + 2 * 2);
  CHECK(matmul_spec().cublas_gemms({4, 5, 6, 0}).size() == 1);
  auto mlp = fused_mlp_spec().cublas_gemms({4, 5, 6});
  REQUIRE(mlp.size() == 3);
  CHECK((mlp[2].m == 4 && mlp[2].n == 5 && mlp[2].k == 6));
}

TEST_CASE("the CPU cross-entropy reference is log-sum-exp minus the target logit, and its mean", "[spec]") {
  std::vector<double> logits{0, 0, 0, 0, 1, 2, 3, 4}, target{2, 3};
  auto out = cross_entropy_spec().cpu_reference({2, 4}, DType::F32, {logits, target});
  CHECK(out[0][0] == Approx(std::log(4.0)));
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(4.0));
  CHECK(out[0][1] == Approx(lse - 4));
  CHECK(out[1][0] == Approx((std::log(4.0) + lse - 4) / 2));
}

TEST_CASE("the CPU attention reference of version 1 is causal: the first query sees only the first key", "[spec]") {
  // One head, S = 2, D = 1: o[0] = v[0]; o[1] mixes v[0] and v[1] by softmax(q1·k / 1).
  std::vector<double> q{5, 1}, k{1, 2}, v{10, 20};
  auto o = flash_attention_v1_spec().cpu_reference({1, 1, 2, 1}, DType::F32, {q, k, v})[0];
  CHECK(o[0] == Approx(10));
  const double w0 = std::exp(1.0) / (std::exp(1.0) + std::exp(2.0));
  CHECK(o[1] == Approx(w0 * 10 + (1 - w0) * 20));
}

TEST_CASE("the CPU SwiGLU reference is silu of the gate times the up projection, projected down", "[spec]") {
  // M = 1, K = 1, I = 2: h_i = silu(x·g_i)·(x·u_i); out = sum_i h_i·d_i.
  std::vector<double> x{2}, wg{1, -1}, wu{3, 4}, wd{0.5, 0.25};
  auto out = fused_mlp_spec().cpu_reference({1, 1, 2}, DType::F32, {x, wg, wu, wd})[0];
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  CHECK(out[0] == Approx(silu(2) * 6 * 0.5 + silu(-2) * 8 * 0.25));
}

TEST_CASE("the CPU matmul reference of version 1 multiplies row-major matrices", "[spec]") {
  std::vector<double> a{1, 2, 3, 4, 5, 6}, b{1, 0, 0, 1, 1, 1};  // a[2,3], b[3,2]
  auto c = matmul_v1_spec().cpu_reference({2, 2, 3}, DType::F32, {a, b})[0];
  CHECK(c == std::vector<double>{4, 5, 10, 11});
}

TEST_CASE("bytes and flops formulas on known shapes", "[spec]") {
  // rmsnorm reads x and weight and writes y.
  CHECK(rmsnorm_spec().bytes({8192, 8192}, DType::F16) == 2.0 * (2 * 8192.0 * 8192 + 8192));
  CHECK(rmsnorm_spec().bytes({10, 100}, DType::F32) == 4.0 * (2 * 1000 + 100));
  CHECK(softmax_spec().bytes({8192, 8192}, DType::BF16) == 2.0 * 2 * 8192 * 8192);
  CHECK(softmax_spec().flops({2, 3}) == 30);
}

TEST_CASE("every declared shape of every spec, older versions too, has positive rows and columns", "[spec]") {
  // The inputs are drawn row by row (harness/gpu/inputs.cpp): a column count of 0 divides by zero in
  // the worker, as a shape ending in a flag rather than a row length once did.
  std::vector<const KernelSpec*> specs = all_specs();
  specs.insert(specs.end(), older_specs().begin(), older_specs().end());
  for (auto* s : specs) {
    std::vector<Shape> shapes = s->sweep_shapes;
    shapes.insert(shapes.end(), s->edge_shapes.begin(), s->edge_shapes.end());
    for (const Shape& e : {s->bench_shape, s->smoke_shape, s->stability_shape, s->determinism_shape}) shapes.push_back(e);
    for (const Shape& e : shapes) {
      INFO(s->type << " version " << s->contract_version << " at " << shape_str(e));
      CHECK(s->cols(e) > 0);
      CHECK(s->rows(e) > 0);
    }
  }
}

TEST_CASE("each spec has 8 to 10 sweep shapes, edge shapes off the vector width, and tolerances no looser than docs/design.md", "[spec]") {
  for (auto* s : all_specs()) {
    INFO(s->type);
    CHECK(s->sweep_shapes.size() >= 8);
    CHECK(s->sweep_shapes.size() <= 10);
    CHECK_FALSE(s->starter_source().empty());
    CHECK(s->tolerance(DType::F16).atol <= 1e-2);
    CHECK(s->tolerance(DType::BF16).atol <= 2e-2);
    if (s->is_memory_bound()) {
      // Row-wise types: odd row lengths, a single row, rows longer than any block's share.
      bool odd = false, one_row = false, long_row = false;
      for (auto& e : s->edge_shapes) {
        odd |= s->cols(e) % 8 != 0;
        // rotary_embedding's rows are q's and k's head vectors: at least one of each.
        one_row |= s->rows(e) == (s->type == "rotary_embedding" ? 2 : 1);
        long_row |= s->cols(e) >= 65536;
      }
      CHECK(odd);
      CHECK(one_row);
      CHECK(long_row);
      CHECK(s->dtypes.size() == 3);
      CHECK(s->tolerance(DType::F32).atol <= 1e-4);
    } else {
      // Tensor-core types: a dimension off the 16x16 fragments, a one-element edge, fp16 and bf16.
      bool off_fragment = false, single = false;
      for (auto& e : s->edge_shapes) {
        for (auto d : e) off_fragment |= d % 16 != 0;
        single |= s->args[0].numel(e) <= 64;
      }
      CHECK(off_fragment);
      CHECK(single);
      // matmul takes fp32 too (version 2: split TF32 on the tensor cores, judged at 1e-4).
      CHECK(s->dtypes == (s->type == "matmul" ? std::vector<DType>{DType::F16, DType::BF16, DType::F32}
                                              : std::vector<DType>{DType::F16, DType::BF16}));
      CHECK(s->validation_rows * s->output_row_length(s->bench_shape) >= 4096);  // a sample of at least 4096 elements
    }
  }
  CHECK(softmax_spec().tolerance(DType::F16).atol <= 1e-3);
  CHECK(softmax_spec().tolerance(DType::BF16).atol <= 2e-3);
  CHECK(softmax_spec().tolerance(DType::F32).atol <= 1e-5);
  CHECK(rmsnorm_spec().tolerance(DType::F16).atol <= 1e-2);
  CHECK(rmsnorm_spec().tolerance(DType::F32).rtol <= 1e-4);
}

TEST_CASE("the CPU rotary reference rotates each pair of halves of q and of k by its position's angle", "[spec]") {
  // One head vector of q and one of k, head_dim 4, at position 0: pairs (x0, x2) and (x1, x3),
  // each half with its own entries of cos and sin (the model's tables, both halves).
  std::vector<double> q{1, 2, 3, 4}, k{-1, 0.5, 2, 8}, cos{0.5, 0, 0.25, 2}, sin{0.25, 1, -1, 3};
  auto out = rotary_embedding_spec().cpu_reference({1, 1, 1, 1, 4, 0}, DType::F32, {q, k, cos, sin});
  REQUIRE(out.size() == 2);
  for (auto [x, y] : {std::pair{q, out[0]}, std::pair{k, out[1]}}) {
    CHECK(y[0] == Approx(x[0] * 0.5 - x[2] * 0.25));
    CHECK(y[2] == Approx(x[2] * 0.25 + x[0] * -1));
    CHECK(y[1] == Approx(x[1] * 0 - x[3] * 1));
    CHECK(y[3] == Approx(x[3] * 2 + x[1] * 3));
  }
  // Bytes: q and k read and written once, the two tables read once per batch in this layout.
  CHECK(rotary_embedding_spec().bytes({2, 32, 8, 2048, 128, 1}, DType::F16) ==
        2.0 * (2.0 * 2 * 40 * 2048 * 128 + 2.0 * 2 * 2048 * 128));
}

TEST_CASE("version 1 of the rotary contract stays: one contiguous q and half-width tables", "[spec]") {
  const KernelSpec* v1 = find_spec("rotary_embedding", 1);
  REQUIRE(v1);
  CHECK(v1 == &rotary_embedding_v1_spec());
  CHECK(v1->shape_names.size() == 4);
  CHECK(v1->starter_source().empty());   // the embedded starter is written for version 2
  std::vector<double> q{1, 2, 3, 4}, cos{0.5, 0}, sin{0.25, 1};
  auto y = v1->cpu_reference({1, 1, 1, 4}, DType::F32, {q, cos, sin})[0];
  CHECK(y[0] == Approx(1 * 0.5 - 3 * 0.25));
  CHECK(y[3] == Approx(4 * 0 + 2 * 1));
}

TEST_CASE("the CPU softmax reference sums to one per row and is shift-invariant", "[spec]") {
  std::vector<double> x{1, 2, 3, 1000, 1000, 1000};
  auto y = softmax_spec().cpu_reference({2, 3}, DType::F32, {x})[0];
  CHECK(y[0] + y[1] + y[2] == Approx(1.0));
  CHECK(y[3] == Approx(1.0 / 3));
  CHECK(y[2] / y[1] == Approx(std::exp(1.0)));
}

TEST_CASE("the CPU rmsnorm reference gives unit RMS before the weight", "[spec]") {
  std::vector<double> x{3, 4, 0, 0}, w{1, 1, 1, 1};
  auto y = rmsnorm_spec().cpu_reference({1, 4}, DType::F32, {x, w})[0];
  // mean square 25/4, rms 2.5
  CHECK(y[0] == Approx(3 / 2.5).epsilon(1e-6));
  CHECK(y[1] == Approx(4 / 2.5).epsilon(1e-6));
}

namespace {
/// The reduce starter's order of sums in fp32: 256 threads, each a running sum of every 256th
/// element, then a tree over the threads.
float starter_order_sum(const std::vector<float>& x) {
  std::vector<float> part(256, 0.f);
  for (size_t i = 0; i < x.size(); ++i) part[i % 256] += x[i];
  for (size_t h = 128; h >= 1; h /= 2)
    for (size_t t = 0; t < h; ++t) part[t] += part[t + h];
  return part[0];
}
}  // namespace

TEST_CASE("reduce's fp32 tolerance grows with the row, so an honest fp32 sum passes where the row cancels, and a dropped element fails",
          "[spec]") {
  const KernelSpec& s = reduce_spec();
  CHECK(s.tolerance_for(DType::F32, {16384, 4096}).atol == Approx(1e-4));   // the timed shape: docs/design.md's
  CHECK(s.tolerance_for(DType::F16, {4, 262144}).atol == s.tolerance(DType::F16).atol);
  CHECK(s.tolerance_for(DType::F32, {4, 262144}).rtol == s.tolerance(DType::F32).rtol);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal;
  double worst_honest = 0, least_dropped = 1e9;
  for (int row = 0; row < 40; ++row) {
    std::vector<float> x(262144);
    for (float& v : x) v = normal(rng);
    double exact = 0;
    for (float v : x) exact += v;
    // The worst case of the check: a row whose sum cancels, where only atol is left.
    const double honest = std::fabs(starter_order_sum(x) - exact);
    worst_honest = std::max(worst_honest, honest);
    least_dropped = std::min(least_dropped, double(std::fabs(x[size_t(row) * 977])));
  }
  const double atol = s.tolerance_for(DType::F32, {4, 262144}).atol;
  CHECK(worst_honest * 4 < atol);
  CHECK(worst_honest > s.tolerance(DType::F32).atol);   // design's 1e-4 alone failed honest sums
  INFO("the smallest element of 40 drawn: " << least_dropped);
  CHECK(atol < 0.01);   // leaving out an element of N(0, 1) is caught unless it is under 0.01 (0.8% of them)
}

TEST_CASE("shapes print and parse", "[spec]") {
  CHECK(shape_str({8192, 4096}) == "8192x4096");
  CHECK(parse_shape("8192x4096") == Shape{8192, 4096});
  CHECK(parse_shape("4,32,4096") == Shape{4, 32, 4096});
  CHECK_FALSE(parse_shape("8192x").has_value());
  CHECK_FALSE(parse_shape("-1x2").has_value());
}
