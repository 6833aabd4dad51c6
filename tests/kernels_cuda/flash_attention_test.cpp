// flash_attention's contract version 2 (grouped-query heads, strided views of a model's
// projections, causal or not) and version 1 kept for the files written for it: the spec, the CPU
// reference against an attention written here from the definition, the compiles of every file,
// and on a GPU every version-2 file through the five stages and timed at a decoder's shapes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <set>

#include "harness/compile/kernel_contract.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "harness/judging/roofline.hpp"
#include "harness/module/tensor_maps.hpp"
#include "kernels_cuda/contract_version.hpp"
#include "kernels_cuda/flash_attention/attention_layouts.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/harness/evaluation/gpu_judge.hpp"
#include "tests/support.hpp"

using namespace ak;
namespace at = ak::attention;

namespace {

const Shape kDecoder{2, 16, 4, 2048, 128, at::kCausal, at::kProjection};   // Qwen3-like: 16 query heads over 4 kv heads
const Shape kBench{4, 32, 32, 4096, 128, at::kCausal, at::kContiguous};

std::string data_file(const std::string& name) { return test::read_file(std::string(AK_SOURCE_DIR) + "/tests/data/" + name); }

std::vector<const Shape*> stage_shapes(const KernelSpec& s) {
  std::vector<const Shape*> out{&s.smoke_shape, &s.stability_shape, &s.determinism_shape};
  for (auto* list : {&s.sweep_shapes, &s.edge_shapes})
    for (const Shape& sh : *list) out.push_back(&sh);
  return out;
}

/// Where element (b, h, s, d) of a [B, H, S, D] tensor lives in its buffer, written from the layouts'
/// definitions rather than from attention::strides: contiguous heads, or a projection's [B, S, H, D].
size_t element(bool projection, int64_t H, int64_t S, int64_t D, int64_t b, int64_t h, int64_t s, int64_t d) {
  return size_t(projection ? ((b * S + s) * H + h) * D + d : ((b * H + h) * S + s) * D + d);
}

struct Layouts {
  bool q, kv, o;   // true: a projection's [B, S, H, D]
};
Layouts layouts_of(int64_t layout) {
  if (layout == at::kProjection) return {true, true, true};
  if (layout == at::kCache) return {true, false, true};
  return {false, false, false};
}

/// softmax(q k^T / sqrt(D)) v with query head h reading kv head `kv_head(h)`, in double, in o's layout.
std::vector<double> attention_by_definition(const Shape& s, const std::vector<std::vector<double>>& in,
                                            const std::function<int64_t(int64_t)>& kv_head) {
  const int64_t B = s[0], Hq = s[1], Hkv = s[2], S = s[3], D = s[4];
  const bool causal = s[at::kMask] == at::kCausal;
  const Layouts l = layouts_of(s[6]);
  std::vector<double> o(size_t(B * Hq * S * D), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t keys = causal ? i + 1 : S;
        std::vector<double> w(static_cast<size_t>(keys));
        double top = -1e300, sum = 0;
        for (int64_t j = 0; j < keys; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += in[0][element(l.q, Hq, S, D, b, h, i, d)] * in[1][element(l.kv, Hkv, S, D, b, kv_head(h), j, d)];
          w[size_t(j)] = dot / std::sqrt(double(D));
          top = std::max(top, w[size_t(j)]);
        }
        for (double& x : w) sum += (x = std::exp(x - top));
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < keys; ++j) acc += w[size_t(j)] * in[2][element(l.kv, Hkv, S, D, b, kv_head(h), j, d)];
          o[element(l.o, Hq, S, D, b, h, i, d)] = acc / sum;
        }
      }
  return o;
}

std::vector<std::vector<double>> random_inputs(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> in;
  for (at::Operand o : {at::Operand::Q, at::Operand::K, at::Operand::V}) {
    in.emplace_back(size_t(at::numel(s, o)));
    for (double& x : in.back()) x = normal(rng);
  }
  return in;
}

double worst_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

CompileRequest entry_request(const KernelSpec& spec, const std::string& source) {
  CompileRequest r{source, spec.type + ".cu", {}, "sm_90a"};
  for (DType d : spec.dtypes) r.name_expressions.push_back(entry_expression(spec, d));
  return r;
}

/// The version-2 files: the starter and every variant.
std::vector<KernelVariant> v2_files() { return kernel_variants("flash_attention"); }

}  // namespace

using Operand = at::Operand;

TEST_CASE("flash_attention version 2 takes Hq and Hkv, a mask, a layout, and every operand's strides", "[spec][flash_attention]") {
  const KernelSpec& v2 = flash_attention_spec();
  CHECK(v2.contract_version == 2);
  CHECK(find_spec("flash_attention") == &v2);
  CHECK(v2.shape_names == std::vector<std::string>{"B", "Hq", "Hkv", "S", "D", "mask", "layout"});
  CHECK(v2.abi() ==
        "template <typename T> __global__ void flash_attention_kernel(const T* __restrict__ q, const T* __restrict__ k, "
        "const T* __restrict__ v, T* __restrict__ o, int B, int Hq, int Hkv, int S, int D, int causal, "
        "int q_stride_batch, int q_stride_head, int q_stride_seq, int k_stride_batch, int k_stride_head, int k_stride_seq, "
        "int v_stride_batch, int v_stride_head, int v_stride_seq, int o_stride_batch, int o_stride_head, int o_stride_seq)");
  CHECK(v2.dtypes == std::vector<DType>{DType::F16, DType::BF16});
  CHECK(v2.bench_shape == kBench);
  CHECK(v2.validation_rows == 256);
}

TEST_CASE("version 2's stage shapes cover grouped heads, MQA, both masks, every layout and head dims 64 and 128", "[spec][flash_attention]") {
  const KernelSpec& v2 = flash_attention_spec();
  std::set<int64_t> ratios, dims, layouts, masks;
  bool decoder = false, odd_seq = false;
  for (const Shape* s : stage_shapes(v2)) {
    INFO(shape_str(*s));
    REQUIRE(s->size() == at::kDims);
    CHECK(v2.shape_error(*s).empty());
    ratios.insert((*s)[at::kQHeads] / (*s)[at::kKvHeads]);
    if ((*s)[at::kKvHeads] == 1 && (*s)[at::kQHeads] > 1) ratios.insert(-1);   // MQA
    dims.insert((*s)[at::kHeadDim]);
    layouts.insert((*s)[at::kLayout]);
    masks.insert((*s)[at::kMask]);
    decoder |= *s == kDecoder;
    odd_seq |= (*s)[at::kSeq] % 2 == 1;
  }
  CHECK(ratios.count(1));
  CHECK(ratios.count(3));    // 6 over 2
  CHECK(ratios.count(4));    // the decoder's 16 over 4
  CHECK(ratios.count(-1));   // one kv head for all
  CHECK(dims == std::set<int64_t>{64, 128});
  CHECK(layouts == std::set<int64_t>{at::kContiguous, at::kProjection, at::kCache});
  CHECK(masks == std::set<int64_t>{at::kCausal, at::kNoMask});
  CHECK(decoder);
  CHECK(odd_seq);
  CHECK(std::find(v2.sweep_shapes.begin(), v2.sweep_shapes.end(), kBench) != v2.sweep_shapes.end());
}

TEST_CASE("a version-2 shape with a head ratio that is not whole, or an unknown flag or layout, is refused with the reason", "[spec][flash_attention]") {
  const KernelSpec& v2 = flash_attention_spec();
  CHECK_THAT(v2.shape_error({1, 6, 4, 64, 64, 1, 1}), Catch::Contains("not a multiple of Hkv 4"));
  CHECK_THAT(v2.shape_error({1, 4, 0, 64, 64, 1, 1}), Catch::Contains("at least 1"));
  CHECK_THAT(v2.shape_error({1, 4, 4, 64, 64, 3, 1}), Catch::Contains("mask 3"));
  CHECK_THAT(v2.shape_error({1, 4, 4, 64, 64, 0, 1}), Catch::Contains("mask 0"));
  CHECK_THAT(v2.shape_error({1, 4, 4, 64, 64, 1, 4}), Catch::Contains("layout 4"));
  CHECK_THAT(v2.shape_error({1, 4, 4, 64, 64, 1, 0}), Catch::Contains("layout 0"));
  CHECK_THAT(v2.shape_error({1, 4, 4, 64, 60, 1, 1}), Catch::Contains("D 60"));
  CHECK_THAT(v2.shape_error({1, 4, 4, 8193, 64, 1, 1}), Catch::Contains("past 8192"));
  CHECK(v2.shape_error({1, 5, 1, 1, 64, 2, 3}).empty());
  // Every code is positive: a shape of version 2 can be written in a config and on the command line.
  CHECK(parse_shape("2x16x4x2048x128x1x2") == kDecoder);
}

TEST_CASE("version 2 counts the flops of the mask it runs and the bytes of Hq query and Hkv kv heads", "[spec][flash_attention]") {
  const KernelSpec& v2 = flash_attention_spec();
  const double full = 4.0 * 4 * 32 * 4096.0 * 4096 * 128;
  CHECK(v2.flops(kBench) == full / 2);
  CHECK(v2.flops({4, 32, 32, 4096, 128, at::kNoMask, at::kContiguous}) == full);
  // q and o of 16 heads, k and v of 4: 2 x (16 + 4) head rows of S x D.
  CHECK(v2.bytes(kDecoder, DType::F16) == 2.0 * 2 * (16 + 4) * 2048 * 128 * 2);
  LaunchGeometry g;
  g.tile_m = 128;
  CHECK(v2.grid(kDecoder, g) == 2 * 16 * 16);   // B x Hq x ceil(S / 128): one block per query tile
  CHECK(v2.grid({1, 6, 2, 129, 64, at::kNoMask, at::kProjection}, g) == 6 * 2);
  CHECK(v2.cols(kDecoder) == 128);
  CHECK(output_rows(v2, kDecoder) == 2 * 16 * 2048);
}

TEST_CASE("each layout's strides are those of the buffer the model has, and a tensor map sees rows of the seq stride", "[spec][flash_attention]") {
  const Shape proj{2, 6, 2, 33, 64, 1, at::kProjection};
  for (Operand o : {Operand::Q, Operand::K, Operand::V, Operand::O}) {
    const int64_t H = at::heads(proj, o);
    const at::Strides st = at::strides(proj, o);
    CHECK(st.batch == 33 * H * 64);
    CHECK(st.head == 64);
    CHECK(st.seq == H * 64);
    const at::Strides c = at::strides({2, 6, 2, 33, 64, 1, at::kContiguous}, o);
    CHECK(c.batch == H * 33 * 64);
    CHECK(c.head == 33 * 64);
    CHECK(c.seq == 64);
  }
  const Shape cache{2, 6, 2, 33, 64, 1, at::kCache};
  CHECK(at::strides(cache, Operand::Q).seq == 6 * 64);   // q and o: the projection's
  CHECK(at::strides(cache, Operand::O).seq == 6 * 64);
  CHECK(at::strides(cache, Operand::K).seq == 64);       // k and v: the cache's contiguous heads
  CHECK(at::strides(cache, Operand::V).head == 33 * 64);
  // A TMA box of q in the projection: [B * S, Hq * D] rows, the head a column offset.
  auto view = tensor_map_view(flash_attention_spec(), TensorMapDecl{0, 64, 128, 128, 0}, proj, DType::F16);
  CHECK(view.cols == 6 * 64);
  CHECK(view.rows == 2 * 33);
  view = tensor_map_view(flash_attention_spec(), TensorMapDecl{1, 64, 128, 128, 0}, cache, DType::BF16);
  CHECK(view.cols == 64);
  CHECK(view.rows == 2 * 2 * 33);
}

TEST_CASE("a row of o's buffer maps back to its batch, head and position in every layout, single heads and positions too", "[spec][flash_attention]") {
  for (const Shape& s : {Shape{2, 3, 1, 5, 8, 1, 1}, Shape{2, 3, 1, 5, 8, 1, 2}, Shape{2, 1, 1, 5, 8, 2, 2},
                         Shape{2, 3, 3, 1, 8, 2, 1}, Shape{2, 3, 3, 1, 8, 2, 3}, Shape{1, 1, 1, 1, 8, 2, 2}}) {
    const at::Strides st = at::strides(s, Operand::O);
    for (int64_t b = 0; b < s[0]; ++b)
      for (int64_t h = 0; h < s[1]; ++h)
        for (int64_t i = 0; i < s[3]; ++i) {
          INFO(shape_str(s) << " b " << b << " h " << h << " s " << i);
          const int64_t row = (b * st.batch + h * st.head + i * st.seq) / s[at::kHeadDim];
          const at::RowPosition p = at::row_position(row, s[1], s[3], s[4], st);
          CHECK(p.batch == b);
          CHECK(p.head == h);
          CHECK(p.seq == i);
        }
  }
}

TEST_CASE("the CPU reference is grouped-query attention by its definition at odd head ratios, lengths and layouts, causal or not", "[spec][flash_attention]") {
  const KernelSpec& v2 = flash_attention_spec();
  uint64_t seed = 1;
  for (auto [hq, hkv] : {std::pair<int64_t, int64_t>{6, 2}, {5, 1}, {8, 8}})
    for (int64_t S : {1, 17, 129})
      for (int64_t mask : {at::kCausal, at::kNoMask})
        for (int64_t layout : {at::kContiguous, at::kProjection, at::kCache}) {
          const Shape s{2, hq, hkv, S, 16, mask, layout};
          INFO(shape_str(s));
          REQUIRE(v2.shape_error(s).empty());
          const auto in = random_inputs(s, seed++);
          const auto got = v2.cpu_reference(s, DType::F16, in);
          REQUIRE(got.size() == 1);
          const auto want = attention_by_definition(s, in, [&](int64_t h) { return h / (hq / hkv); });
          CHECK(worst_difference(got[0], want) < 1e-12);
          // The mapping is the point: reading kv head h % Hkv is another answer wherever it differs.
          if (hq != hkv && hkv > 1) {
            const auto wrong = attention_by_definition(s, in, [&](int64_t h) { return h % hkv; });
            CHECK(worst_difference(got[0], wrong) > 1e-3);
          }
        }
}

TEST_CASE("the CPU reference's first query sees only the first key when causal and every key when not", "[spec][flash_attention]") {
  const KernelSpec& v2 = flash_attention_spec();
  // One head, two positions, D 8: v's rows are all 1 then all 3; q k^T = 0, so weights are equal.
  std::vector<double> q(16, 0.0), k(16, 0.0), v(16, 1.0);
  for (int d = 0; d < 8; ++d) v[size_t(8 + d)] = 3.0;
  const auto causal = v2.cpu_reference({1, 1, 1, 2, 8, at::kCausal, at::kContiguous}, DType::F32, {q, k, v})[0];
  const auto full = v2.cpu_reference({1, 1, 1, 2, 8, at::kNoMask, at::kContiguous}, DType::F32, {q, k, v})[0];
  CHECK(causal[0] == Approx(1.0));
  CHECK(full[0] == Approx(2.0));
  CHECK(causal[8] == Approx(2.0));
  CHECK(full[8] == Approx(2.0));
}

TEST_CASE("flash_attention version 1 stays registered, and its old files load against it", "[spec][flash_attention]") {
  const KernelSpec& v1 = flash_attention_v1_spec();
  CHECK(v1.contract_version == 1);
  CHECK(find_spec("flash_attention", 1) == &v1);
  CHECK(find_spec("flash_attention", 2) == &flash_attention_spec());
  CHECK(v1.shape_names == std::vector<std::string>{"B", "H", "S", "D"});
  CHECK(v1.bench_shape == Shape{4, 32, 4096, 128});
  CHECK(v1.flops({4, 32, 4096, 128}) == 2.0 * 4 * 32 * 4096.0 * 4096 * 128);
  CHECK(v1.starter_source().empty());   // the embedded starter is written for version 2
  for (const char* name : {"flash_attention_v1.cu", "flash_attention_v1_tma_pingpong.cu"}) {
    INFO(name);
    const std::string old = data_file(name);
    auto spec = spec_for_file("flash_attention", old);
    REQUIRE(spec.ok());
    CHECK(*spec == &v1);
    auto out = nvrtc_compile(entry_request(v1, old));
    REQUIRE(out.ok());
    INFO(out->log);
    CHECK(out->ok);
    CHECK(out->functions.size() == 2);
  }
}

TEST_CASE("the starter and every variant declare version 2 and compile for sm_90a, the TMA variant without spills", "[spec][flash_attention][nvrtc]") {
  const KernelSpec& v2 = flash_attention_spec();
  const auto files = v2_files();
  std::set<std::string> names;
  for (const auto& f : files) names.insert(f.name);
  CHECK(names == std::set<std::string>{"starter", "mma_registers", "wgmma_registers", "tma_pingpong"});
  for (const auto& f : files) {
    INFO("flash_attention " << f.name);
    CHECK(declared_contract_version(*f.source).value_or(0) == 2);
    auto spec = spec_for_file("flash_attention", *f.source);
    REQUIRE(spec.ok());
    CHECK(*spec == &v2);
    auto out = nvrtc_compile(entry_request(v2, *f.source));
    REQUIRE(out.ok());
    INFO(out->log);
    CHECK(out->ok);
    REQUIRE(out->functions.size() == 2);
    for (const auto& fn : out->functions) {
      INFO(fn.lowered_name << ": " << fn.registers << " registers, " << fn.spill_stores << " bytes spilled");
      if (f.name == "tma_pingpong" || f.name == "wgmma_registers") CHECK(fn.spill_stores == 0);
    }
  }
}

// ---- on a GPU ----

TEST_CASE("every version-2 flash_attention file passes the five stages and is timed at the decoder's shape and at S 8192", "[gpu][flash_attention]") {
  if (!test::gpu_or_skip()) return;
  const KernelSpec& v2 = flash_attention_spec();
  for (const auto& f : v2_files())
    for (const Shape& shape : {kDecoder, Shape{2, 16, 4, 8192, 128, at::kCausal, at::kProjection}}) {
      Verdict v = test::judge(v2, *f.source, "", shape, 20);
      INFO("flash_attention " << f.name << " timed at " << shape_str(shape) << ": " << correctness_name(v.correctness) << " "
                              << v.message << " (failed stage '" << v.failed_stage << "' at " << v.failed_shape << " "
                              << v.failed_dtype << ", worst element " << v.worst_index << ": got " << v.worst_got
                              << ", expected " << v.worst_expected << ")");
      CHECK(v.correctness == Correctness::Pass);
      if (!v.timing) continue;
      CHECK(v.pct_peak < kSuspectFactor);
      std::printf("flash_attention %-16s %-26s %10.1f us %7.1f TFLOPS\n", f.name.c_str(), shape_str(shape).c_str(),
                  v.timing->median_us, v.throughput);
    }
}

TEST_CASE("version-1 flash_attention files still pass the five stages under version 1", "[gpu][flash_attention]") {
  if (!test::gpu_or_skip()) return;
  for (const char* name : {"flash_attention_v1.cu", "flash_attention_v1_tma_pingpong.cu"}) {
    Verdict v = test::judge(flash_attention_v1_spec(), data_file(name), "", {1, 8, 1024, 128}, 10);
    INFO(name << ": " << correctness_name(v.correctness) << " " << v.message << " (failed stage '" << v.failed_stage << "' at "
              << v.failed_shape << " " << v.failed_dtype << ")");
    CHECK(v.correctness == Correctness::Pass);
  }
}
