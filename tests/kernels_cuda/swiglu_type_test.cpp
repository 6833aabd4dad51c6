// swiglu's contract versions: version 2 reads the rows of gate and up ld apart (a LlamaMLP's two
// projections at ld = cols, the halves of Phi-3's fused gate_up projection at ld = 2 cols);
// version 1 (dense operands) stays registered for files written for it.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

std::vector<std::string> arg_names(const KernelSpec& spec) {
  std::vector<std::string> names;
  for (auto& a : spec.args) names.push_back(a.name);
  return names;
}

double silu(double v) { return v / (1 + std::exp(-v)); }

/// Stage shapes whose operands have a gap between cols and ld.
int strided(const std::vector<Shape>& shapes) {
  int n = 0;
  for (const Shape& s : shapes) n += s[2] > s[1];
  return n;
}

}  // namespace

TEST_CASE("swiglu version 2 takes gate, up, y, rows, cols and the operands' row stride ld", "[spec][swiglu]") {
  const KernelSpec& v2 = swiglu_spec();
  CHECK(v2.contract_version == 2);
  CHECK(arg_names(v2) == std::vector<std::string>{"gate", "up", "y", "rows", "cols", "ld"});
  CHECK(v2.shape_names == std::vector<std::string>{"rows", "cols", "ld"});
  CHECK_THAT(v2.abi(), Catch::Contains("int rows, int cols, int ld"));
  // gate and up span every row's ld elements, y is dense; the traffic is the elements read and written.
  const Shape phi3{4096, 8192, 16384};
  CHECK(v2.args[0].numel(phi3) == 4096LL * 16384);
  CHECK(v2.args[1].numel(phi3) == 4096LL * 16384);
  CHECK(v2.args[2].numel(phi3) == 4096LL * 8192);
  CHECK(v2.bytes(phi3, DType::F16) == 3.0 * 2 * 4096 * 8192);
  CHECK(v2.rows(phi3) == 4096);
}

TEST_CASE("the version-2 CPU reference reads row r of gate and up at r * ld and leaves the gap alone", "[spec][swiglu]") {
  // rows 2, cols 2, ld 3: the third element of each row is another operand's (a fused projection's other half).
  std::vector<double> gate{2, -1, 99, 0, -1000, 99}, up{3, 4, 99, 5, 7, 99};
  auto y = swiglu_spec().cpu_reference({2, 2, 3}, DType::F32, {gate, up})[0];
  REQUIRE(y.size() == 4);
  CHECK(y[0] == Approx(silu(2) * 3));
  CHECK(y[1] == Approx(silu(-1) * 4));
  CHECK(y[2] == 0);
  CHECK(y[3] == 0);  // exp(1000) overflows: the quotient is the limit, not NaN
  CHECK_FALSE(std::isnan(y[3]));
  // Read as dense rows (a kernel that ignores ld), the second row would be silu(99) * 99 and silu(0) * 5.
  auto dense = swiglu_v1_spec().cpu_reference({2, 2}, DType::F32, {gate, up})[0];
  CHECK(dense[2] != Approx(y[2]));
  // At ld = cols both versions agree.
  std::vector<double> g{0.5, -2, 3, 1}, u{1, 2, 3, 4};
  CHECK(swiglu_spec().cpu_reference({2, 2, 2}, DType::F32, {g, u})[0] == swiglu_v1_spec().cpu_reference({2, 2}, DType::F32, {g, u})[0]);
}

TEST_CASE("every stage of version 2 has shapes with ld past cols, so a kernel that ignores ld fails", "[spec][swiglu]") {
  const KernelSpec& v2 = swiglu_spec();
  CHECK(v2.smoke_shape[2] > v2.smoke_shape[1]);
  CHECK(strided(v2.sweep_shapes) >= 5);
  CHECK(strided(v2.edge_shapes) >= 4);
  CHECK(v2.stability_shape[2] > v2.stability_shape[1]);
  CHECK(v2.determinism_shape[2] > v2.determinism_shape[1]);
  // Both layouts a model hands the op: ld = cols and ld = 2 cols; and strides no vector width divides.
  bool dense = false, halves = false, odd = false;
  for (const Shape& s : v2.sweep_shapes) {
    dense = dense || s[2] == s[1];
    halves = halves || s[2] == 2 * s[1];
    odd = odd || (s[2] > s[1] && s[2] % 8 != 0);
  }
  CHECK(dense);
  CHECK(halves);
  CHECK(odd);
  for (const auto* list : {&v2.sweep_shapes, &v2.edge_shapes})
    for (const Shape& s : *list) {
      INFO(shape_str(s));
      CHECK(v2.shape_error(s).empty());
    }
}

TEST_CASE("a version-2 shape whose rows would overlap is refused with what to give", "[spec][swiglu]") {
  const std::string why = swiglu_spec().shape_error({4, 128, 64});
  CHECK_THAT(why, Catch::Contains("ld"));
  CHECK_THAT(why, Catch::Contains("ld >= cols"));
  CHECK(swiglu_spec().shape_error({4, 128, 128}).empty());
}

TEST_CASE("version 2's grid is one block per ak_rows_per_block rows, whatever cols and ld", "[spec][swiglu]") {
  LaunchGeometry g;
  g.block_threads = 256;
  g.rows_per_block = 4;
  CHECK(swiglu_spec().grid({1031, 257, 514}, g) == 258);
}

TEST_CASE("swiglu version 1 stays registered, and its old starter is judged under it", "[spec][swiglu][contract]") {
  const KernelSpec* v1 = find_spec("swiglu", 1);
  REQUIRE(v1 == &swiglu_v1_spec());
  CHECK(arg_names(*v1) == std::vector<std::string>{"gate", "up", "y", "rows", "cols"});
  CHECK(v1->shape_names == std::vector<std::string>{"rows", "cols"});
  CHECK(v1->bytes({4096, 11008}, DType::F16) == 3.0 * 2 * 4096 * 11008);
  auto old = spec_for_file("swiglu", test::read_file(AK_SOURCE_DIR "/tests/data/swiglu_v1.cu"));
  REQUIRE(old.ok());
  CHECK(*old == v1);
  auto now = spec_for_file("swiglu", swiglu_spec().starter_source());
  REQUIRE(now.ok());
  CHECK(*now == &swiglu_spec());
  for (const auto& v : kernel_variants("swiglu")) {
    INFO(v.name);
    auto s = spec_for_file("swiglu", *v.source);
    REQUIRE(s.ok());
    CHECK((*s)->contract_version == 2);
  }
}
