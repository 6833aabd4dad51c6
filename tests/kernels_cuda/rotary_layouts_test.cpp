#include <catch2/catch.hpp>

#include <set>

#include "kernels_cuda/grid_rules.h"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rotary_embedding/rotary_layouts.hpp"

using namespace ak;
using rotary::Operand;

namespace {

/// The offsets, in the operand's buffer, of every element of a [batch, heads, seq, head_dim] tensor.
std::set<int64_t> offsets(const Shape& s, Operand o) {
  const rotary::Strides st = rotary::strides(s, o);
  std::set<int64_t> out;
  for (int64_t b = 0; b < s[rotary::kBatch]; ++b)
    for (int64_t h = 0; h < rotary::heads(s, o); ++h)
      for (int64_t t = 0; t < s[rotary::kSeq]; ++t)
        for (int64_t d = 0; d < s[rotary::kHeadDim]; ++d) out.insert(b * st.batch + h * st.head + t * st.seq + d);
  return out;
}

}  // namespace

TEST_CASE("each layout puts every element of q, k and the outputs at a distinct place inside its buffer", "[spec][rotary]") {
  for (int64_t layout = 0; layout < rotary::kLayouts; ++layout)
    for (Operand o : {Operand::Q, Operand::K, Operand::QOut, Operand::KOut}) {
      const Shape s{2, 6, 2, 5, 8, layout};
      INFO("layout " << layout << " operand " << int(o));
      const auto at = offsets(s, o);
      CHECK(int64_t(at.size()) == s[0] * rotary::heads(s, o) * s[3] * s[4]);   // no two elements share a place
      CHECK(*at.begin() >= 0);
      CHECK(*at.rbegin() < rotary::numel(s, o));
      // Outputs are dense: they fill their buffer, as PyTorch's elementwise result would.
      if (o == Operand::QOut || o == Operand::KOut) CHECK(int64_t(at.size()) == rotary::numel(s, o));
    }
}

TEST_CASE("the layouts are the model's: contiguous, a projection's transposed view, rows of a fused qkv", "[spec][rotary]") {
  const Shape projection{2, 32, 8, 2048, 128, rotary::kProjection};
  auto q = rotary::strides(projection, Operand::Q);
  // q = proj(x).view(b, s, 32, 128).transpose(1, 2): strides (s*32*128, 128, 32*128).
  CHECK(q.batch == 2048 * 32 * 128);
  CHECK(q.head == 128);
  CHECK(q.seq == 32 * 128);
  CHECK(rotary::strides(projection, Operand::K).seq == 8 * 128);
  CHECK(rotary::table_strides(projection).batch == 2048 * 128);
  const Shape fused{2, 32, 8, 2048, 128, rotary::kFusedRows};
  CHECK(rotary::strides(fused, Operand::Q).seq == (32 + 2 * 8) * 128);   // q, k and v side by side in a row
  CHECK(rotary::strides(fused, Operand::QOut).seq == 32 * 128);          // the result is dense again
  const Shape contiguous{2, 32, 8, 2048, 128, rotary::kContiguous};
  CHECK(rotary::strides(contiguous, Operand::Q).head == 2048 * 128);
  CHECK(rotary::table_strides(contiguous).batch == 0);                   // one table for every batch
}

TEST_CASE("version 2's stride arguments carry the layout's strides, and its grid covers q's and k's rows", "[spec][rotary]") {
  const KernelSpec& spec = rotary_embedding_spec();
  REQUIRE(spec.contract_version == 2);
  const Shape s{3, 4, 2, 7, 64, rotary::kFusedRows};
  int strides_seen = 0;
  for (const ArgSpec& a : spec.args)
    if (a.kind == ArgSpec::Dim && a.computed) {
      ++strides_seen;
      if (a.name == "q_stride_seq") CHECK(a.int_value(s) == (4 + 2 * 2) * 64);
      if (a.name == "k_out_stride_head") CHECK(a.int_value(s) == 64);
      if (a.name == "table_stride_batch") CHECK(a.int_value(s) == 7 * 64);
    }
  CHECK(strides_seen == 14);
  CHECK(spec.rows(s) == 3 * (4 + 2) * 7);
  CHECK(spec.cols(s) == 64);
  LaunchGeometry g;
  g.rows_per_block = 4;
  CHECK(spec.grid(s, g) == (3 * 6 * 7 + 3) / 4);
  const long long raw[] = {3, 4, 2, 7, 64, 2};
  CHECK(ak_rotary_blocks(raw, 4) == spec.grid(s, g));
}

TEST_CASE("a rotary shape with an odd head_dim or an unknown layout is refused with the reason", "[spec][rotary]") {
  const KernelSpec& spec = rotary_embedding_spec();
  CHECK(spec.shape_error({1, 1, 1, 4, 64, 1}).empty());
  CHECK(spec.shape_error({1, 1, 1, 4, 63, 1}).find("odd") != std::string::npos);
  CHECK(spec.shape_error({1, 1, 1, 4, 64, 3}).find("layout 3") != std::string::npos);
}

TEST_CASE("the CPU rotary reference reads and writes through the layout's strides", "[spec][rotary]") {
  // The same values in the fused layout and the contiguous one give the same rotation.
  const Shape fused{1, 2, 1, 3, 4, rotary::kFusedRows}, plain{1, 2, 1, 3, 4, rotary::kContiguous};
  std::vector<double> qf(size_t(rotary::numel(fused, Operand::Q)), 99.0), kf(size_t(rotary::numel(fused, Operand::K)), 99.0);
  std::vector<double> qp(size_t(rotary::numel(plain, Operand::Q))), kp(size_t(rotary::numel(plain, Operand::K)));
  const auto fq = rotary::strides(fused, Operand::Q), pq = rotary::strides(plain, Operand::Q);
  const auto fk = rotary::strides(fused, Operand::K), pk = rotary::strides(plain, Operand::K);
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < 3; ++t)
      for (int d = 0; d < 4; ++d) {
        qf[size_t(h * fq.head + t * fq.seq + d)] = qp[size_t(h * pq.head + t * pq.seq + d)] = 10 * h + t + 0.1 * d;
        if (h == 0) kf[size_t(t * fk.seq + d)] = kp[size_t(t * pk.seq + d)] = -t - 0.2 * d;
      }
  // The fused layout's tables are per batch; with one batch they hold what the shared one does.
  std::vector<double> cos(12), sin(12);
  for (size_t i = 0; i < 12; ++i) cos[i] = 0.1 * double(i), sin[i] = 1 - 0.05 * double(i);
  const auto a = rotary_embedding_spec().cpu_reference(fused, DType::F32, {qf, kf, cos, sin});
  const auto b = rotary_embedding_spec().cpu_reference(plain, DType::F32, {qp, kp, cos, sin});
  const auto qo_f = rotary::strides(fused, Operand::QOut), qo_p = rotary::strides(plain, Operand::QOut);
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < 3; ++t)
      for (int d = 0; d < 4; ++d)
        CHECK(a[0][size_t(h * qo_f.head + t * qo_f.seq + d)] == Approx(b[0][size_t(h * qo_p.head + t * qo_p.seq + d)]));
  CHECK(a[1] == b[1]);   // k: one head, the same dense order in both
}
