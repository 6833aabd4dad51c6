// flash_attention: o = softmax(q k^T / sqrt(D) [+ causal mask]) v per (batch, query head), like
// F.scaled_dot_product_attention.
//   Version 2 (the newest): grouped-query heads (Hkv kv heads, query head h reads kv head
//   h / (Hq / Hkv)), q, k, v and o as strided views (a model's projections), causal or not.
//   Version 1: one head count, contiguous [B, H, S, D], causal; kept so that files and run folders
//   written for it still load.
#include <algorithm>
#include <cmath>

#include "kernels_cuda/flash_attention/attention_layouts.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"
#include "kernels_cuda/tiled_grid.hpp"

namespace ak {
namespace {

constexpr int kMaxSeq = 8192;  // the reference keeps one query row's scores in shared memory

// One block of 256 threads per sampled query row: warps over keys (lanes over D) for the scores,
// then the softmax in shared memory, then threads over D for the weighted sum of v.
const char* kReferenceV1 = R"(
template <typename T, typename O>
__global__ void flash_attention_reference(const T* q, const T* k, const T* v, O* o, int B, int H, int S, int D,
                                          const int* rows) {
  __shared__ float p[8192];
  __shared__ float qs[256];
  if (S > 8192 || D > 256) __trap();  // past what this reference holds: refuse rather than be wrong
  const long long slot = blockIdx.x;
  const long long row = rows ? rows[slot] : slot;  // (b * H + h) * S + i
  const long long head = row / S;
  const int i = int(row % S);
  const T* kh = k + head * S * D;
  const T* vh = v + head * S * D;
  const float scale = rsqrtf(float(D));
  for (int d = threadIdx.x; d < D; d += blockDim.x) qs[d] = ref_f(q[row * D + d]);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int j = warp; j <= i; j += blockDim.x / 32) {
    float s = 0.f;
    for (int d = lane; d < D; d += 32) s = fmaf(qs[d], ref_f(kh[(long long)j * D + d]), s);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) p[j] = s * scale;
  }
  __syncthreads();
  float m = __int_as_float(0xff800000);
  for (int j = threadIdx.x; j <= i; j += blockDim.x) m = fmaxf(m, p[j]);
  m = block_max(m);
  float l = 0.f;
  for (int j = threadIdx.x; j <= i; j += blockDim.x) {
    const float e = expf(p[j] - m);
    p[j] = e;
    l += e;
  }
  l = block_sum(l);
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j <= i; ++j) acc = fmaf(p[j], ref_f(vh[(long long)j * D + d]), acc);
    o[slot * D + d] = ref_out<O>(acc / l);
  }
}
)";

std::vector<std::vector<double>> cpu_attention(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t heads = s[0] * s[1], S = s[2], D = s[3];
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<double> o(in[0].size(), 0.0), p(static_cast<size_t>(S));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < S; ++i) {
      const double* qi = &in[0][size_t((h * S + i) * D)];
      double m = -1e300, l = 0;
      for (int64_t j = 0; j <= i; ++j) {
        const double* kj = &in[1][size_t((h * S + j) * D)];
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
        p[size_t(j)] = dot * scale;
        m = std::max(m, p[size_t(j)]);
      }
      for (int64_t j = 0; j <= i; ++j) l += (p[size_t(j)] = std::exp(p[size_t(j)] - m));
      double* oi = &o[size_t((h * S + i) * D)];
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t d = 0; d < D; ++d) oi[d] += p[size_t(j)] / l * in[2][size_t((h * S + j) * D + d)];
    }
  return {o};
}

KernelSpec make_v1() {
  KernelSpec k;
  k.contract_version = 1;
  k.type = "flash_attention";
  k.summary = "o = scaled_dot_product_attention(q, k, v, is_causal=True), q/k/v/o [B,H,S,D], D in {64, 128}";
  k.entry = "flash_attention_kernel";
  k.reference_entry = "flash_attention_reference";
  k.shape_names = {"B", "H", "S", "D"};
  auto all = [](const Shape& s) { return s[0] * s[1] * s[2] * s[3]; };
  k.args = {{ArgSpec::Input, "q", all, Fill::Data},
            {ArgSpec::Input, "k", all, Fill::Data},
            // v stays normal under every recipe: P is rounded to T before P·v, as in every flash
            // kernel, and with v sixteen times larger that rounding alone exceeds bf16's tolerance
            // on outputs that cancel to near zero.
            {ArgSpec::Input, "v", all, Fill::PlainData},
            {ArgSpec::Output, "o", all},
            {ArgSpec::Dim, "B", {}, Fill::Data, 0},
            {ArgSpec::Dim, "H", {}, Fill::Data, 1},
            {ArgSpec::Dim, "S", {}, Fill::Data, 2},
            {ArgSpec::Dim, "D", {}, Fill::Data, 3}};
  // Rows as TMA sees them: every tensor is B * H * S rows of D.
  for (int i = 0; i < 4; ++i) k.args[size_t(i)].row_length = [](const Shape& s) { return s[3]; };
  k.dtypes = {DType::F16, DType::BF16};
  k.metric = Metric::TFLOPS;
  k.bench_shape = {4, 32, 4096, 128};
  k.smoke_shape = {1, 2, 128, 64};
  k.sweep_shapes = {{1, 1, 64, 64},    {2, 4, 256, 64},   {1, 2, 512, 128},   {1, 1, 100, 64},    {2, 8, 1024, 128},
                    {1, 4, 1000, 128}, {4, 8, 2048, 64},  {1, 16, 4096, 128}, {4, 32, 4096, 128}};
  k.stability_shape = {1, 4, 512, 128};
  k.determinism_shape = {1, 8, 2048, 128};
  k.edge_shapes = {{1, 1, 1, 64},   {1, 1, 4096, 128}, {1, 1, 3, 64},     {1, 2, 17, 128},
                   {2, 1, 33, 64},  {1, 1, 65, 128},   {1, 1, kMaxSeq, 64}, {3, 5, 127, 128}};
  // Softmax turns a rounding difference between two near-equal huge logits into a different
  // answer, so only inputs whose logits stay apart or exactly equal are used.
  k.stability_recipes = {Recipe::Tiny, Recipe::ConstantRows, Recipe::Large};
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) { return 4.0 * double(s[0] * s[1] * s[2] * s[3]) * dtype_size(d); };
  // The convention of FlashAttention's benchmarks: 4·B·H·S²·D, halved by the causal mask.
  k.flops = [](const Shape& s) { return 2.0 * double(s[0] * s[1]) * double(s[2]) * double(s[2]) * double(s[3]); };
  k.grid = [](const Shape& s, const LaunchGeometry& g) { return tiled_grid(s[2], 1, g.tile_m, 1, s[0] * s[1]); };
  k.launch_help = "extern \"C\" __constant__ int ak_tile_m = ...;  // query rows per block: grid = B * H * ceil(S / ak_tile_m), head-major";
  k.reference_source = reference_prelude() + kReferenceV1;
  k.cpu_reference = cpu_attention;
  k.validation_rows = 256;
  k.output_row_length = [](const Shape& s) { return s[3]; };
  return k;
}


// Version 2: one block of 256 threads per sampled row of o, a row being D consecutive elements of
// o's buffer (`rows` names them so); the row's (batch, head, position) come back from o's
// strides. Scores in shared memory (S <= 8192), softmax in fp32, then the weighted sum of v.
const char* kReferenceV2 = R"(
__device__ void attention_row_position(long long row, int heads, int S, int D, long long sb, long long sh,
                                       long long ss, long long& b, long long& h, long long& s) {
  const long long off = row * D;
  b = off / sb;
  const long long rem = off - b * sb;
  if (heads == 1) { h = 0; s = rem / ss; return; }
  if (sh > ss || (sh == ss && S == 1)) { h = rem / sh; s = (rem - h * sh) / ss; return; }
  s = rem / ss;
  h = (rem - s * ss) / sh;
}

template <typename T, typename O>
__global__ void flash_attention_reference(const T* q, const T* k, const T* v, O* o, int B, int Hq, int Hkv, int S,
                                          int D, int causal, int q_stride_batch, int q_stride_head,
                                          int q_stride_seq, int k_stride_batch, int k_stride_head, int k_stride_seq,
                                          int v_stride_batch, int v_stride_head, int v_stride_seq,
                                          int o_stride_batch, int o_stride_head, int o_stride_seq, const int* rows) {
  __shared__ float p[8192];
  __shared__ float qs[256];
  if (S > 8192 || D > 256) __trap();  // past what this reference holds: refuse rather than be wrong
  const long long slot = blockIdx.x;
  const long long row = rows ? rows[slot] : slot;
  long long b, h, i;
  attention_row_position(row, Hq, S, D, o_stride_batch, o_stride_head, o_stride_seq, b, h, i);
  const long long hk = h / (Hq / Hkv);
  const T* qi = q + b * q_stride_batch + h * q_stride_head + i * q_stride_seq;
  const T* kh = k + b * k_stride_batch + hk * k_stride_head;
  const T* vh = v + b * v_stride_batch + hk * v_stride_head;
  const int last = causal ? int(i) : S - 1;
  const float scale = rsqrtf(float(D));
  for (int d = threadIdx.x; d < D; d += blockDim.x) qs[d] = ref_f(qi[d]);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int j = warp; j <= last; j += blockDim.x / 32) {
    float s = 0.f;
    for (int d = lane; d < D; d += 32) s = fmaf(qs[d], ref_f(kh[(long long)j * k_stride_seq + d]), s);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) p[j] = s * scale;
  }
  __syncthreads();
  float m = __int_as_float(0xff800000);
  for (int j = threadIdx.x; j <= last; j += blockDim.x) m = fmaxf(m, p[j]);
  m = block_max(m);
  float l = 0.f;
  for (int j = threadIdx.x; j <= last; j += blockDim.x) {
    const float e = expf(p[j] - m);
    p[j] = e;
    l += e;
  }
  l = block_sum(l);
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j <= last; ++j) acc = fmaf(p[j], ref_f(vh[(long long)j * v_stride_seq + d]), acc);
    o[slot * D + d] = ref_out<O>(acc / l);
  }
}
)";

using attention::Operand;

/// Attention in double over the layouts' strides: inputs and the output in their buffers' order.
std::vector<std::vector<double>> cpu_attention_v2(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  namespace at = attention;
  const int64_t B = s[at::kBatch], Hq = s[at::kQHeads], S = s[at::kSeq], D = s[at::kHeadDim];
  const bool causal = at::is_causal(s);
  const at::Strides qs = at::strides(s, Operand::Q), ks = at::strides(s, Operand::K), vs = at::strides(s, Operand::V),
                    os = at::strides(s, Operand::O);
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<double> o(static_cast<size_t>(at::numel(s, Operand::O)), 0.0);
  std::vector<double> p(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = at::kv_head_of(s, h);
      const double* kh = in[1].data() + b * ks.batch + hk * ks.head;
      const double* vh = in[2].data() + b * vs.batch + hk * vs.head;
      for (int64_t i = 0; i < S; ++i) {
        const double* qi = in[0].data() + b * qs.batch + h * qs.head + i * qs.seq;
        const int64_t last = causal ? i : S - 1;
        double m = -1e300, l = 0;
        for (int64_t j = 0; j <= last; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qi[d] * kh[j * ks.seq + d];
          p[size_t(j)] = dot * scale;
          m = std::max(m, p[size_t(j)]);
        }
        for (int64_t j = 0; j <= last; ++j) l += (p[size_t(j)] = std::exp(p[size_t(j)] - m));
        double* oi = o.data() + b * os.batch + h * os.head + i * os.seq;
        for (int64_t j = 0; j <= last; ++j)
          for (int64_t d = 0; d < D; ++d) oi[d] += p[size_t(j)] / l * vh[j * vs.seq + d];
      }
    }
  return {o};
}

/// A stride argument: element strides of `o` ("batch", "head" or "seq"), from the shape's layout.
ArgSpec stride_arg(const std::string& name, Operand o, int64_t attention::Strides::*member) {
  ArgSpec a{ArgSpec::Dim, name};
  a.computed = [o, member](const Shape& s) { return attention::strides(s, o).*member; };
  return a;
}

/// A buffer of q, k, v or o, seen by a tensor map as rows of its seq stride: a projection's
/// [B * S, H * D] rows (the head a column offset), a contiguous tensor's [B * H * S, D].
ArgSpec operand_arg(ArgSpec::Kind kind, const std::string& name, Operand o, Fill fill) {
  ArgSpec a{kind, name, [o](const Shape& s) { return attention::numel(s, o); }, fill};
  a.row_length = [o](const Shape& s) { return attention::strides(s, o).seq; };
  return a;
}

/// The kernel's `causal` flag, 1 or 0, from the shape's mask code.
ArgSpec causal_arg() {
  ArgSpec a{ArgSpec::Dim, "causal"};
  a.computed = [](const Shape& s) -> int64_t { return attention::is_causal(s) ? 1 : 0; };
  return a;
}

KernelSpec make_v2() {
  namespace at = attention;
  KernelSpec k;
  k.type = "flash_attention";
  k.contract_version = 2;
  k.summary = "o = scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True): Hq query heads over "
              "Hkv kv heads, strided q/k/v/o [B,H,S,D] as a model's projections give them";
  k.entry = "flash_attention_kernel";
  k.reference_entry = "flash_attention_reference";
  k.shape_names = {"B", "Hq", "Hkv", "S", "D", "mask", "layout"};
  k.args = {operand_arg(ArgSpec::Input, "q", Operand::Q, Fill::Data),
            operand_arg(ArgSpec::Input, "k", Operand::K, Fill::Data),
            // v stays normal under every recipe (version 1 says why).
            operand_arg(ArgSpec::Input, "v", Operand::V, Fill::PlainData),
            operand_arg(ArgSpec::Output, "o", Operand::O, Fill::Data),
            {ArgSpec::Dim, "B", {}, Fill::Data, at::kBatch},
            {ArgSpec::Dim, "Hq", {}, Fill::Data, at::kQHeads},
            {ArgSpec::Dim, "Hkv", {}, Fill::Data, at::kKvHeads},
            {ArgSpec::Dim, "S", {}, Fill::Data, at::kSeq},
            {ArgSpec::Dim, "D", {}, Fill::Data, at::kHeadDim},
            causal_arg()};
  for (auto [prefix, o] : {std::pair{"q", Operand::Q}, {"k", Operand::K}, {"v", Operand::V}, {"o", Operand::O}}) {
    k.args.push_back(stride_arg(std::string(prefix) + "_stride_batch", o, &at::Strides::batch));
    k.args.push_back(stride_arg(std::string(prefix) + "_stride_head", o, &at::Strides::head));
    k.args.push_back(stride_arg(std::string(prefix) + "_stride_seq", o, &at::Strides::seq));
  }
  k.dtypes = {DType::F16, DType::BF16};
  k.metric = Metric::TFLOPS;
  // FlashAttention's benchmark shape, causal, contiguous: the problem version 1 timed, so the two compare.
  k.bench_shape = {4, 32, 32, 4096, 128, at::kCausal, at::kContiguous};
  k.smoke_shape = {1, 4, 2, 128, 64, at::kCausal, at::kProjection};
  k.sweep_shapes = {{1, 1, 1, 64, 64, 1, 1},      {2, 4, 2, 256, 64, 2, 2},     {1, 6, 2, 512, 128, 1, 2},
                    {1, 5, 1, 100, 64, 2, 3},     {2, 8, 8, 1024, 128, 1, 2},   {1, 4, 1, 1000, 128, 1, 3},
                    {4, 8, 2, 2048, 64, 2, 1},    {2, 16, 4, 2048, 128, 1, 2},  {1, 16, 4, 4096, 128, 2, 2},
                    {4, 32, 32, 4096, 128, 1, 1}};
  k.stability_shape = {1, 4, 2, 512, 128, at::kCausal, at::kProjection};
  k.determinism_shape = {1, 8, 2, 2048, 128, at::kNoMask, at::kProjection};
  k.edge_shapes = {{1, 1, 1, 1, 64, 1, 1},    {1, 1, 1, 1, 64, 2, 2},     {1, 3, 1, 17, 128, 2, 3},
                   {2, 2, 2, 33, 64, 1, 2},   {1, 1, 1, 65, 128, 2, 1},   {1, 6, 2, 129, 128, 2, 2},
                   {1, 2, 1, kMaxSeq, 64, 1, 2}, {3, 5, 5, 127, 128, 1, 1}, {1, 1, 1, 4096, 128, 2, 1}};
  k.stability_recipes = {Recipe::Tiny, Recipe::ConstantRows, Recipe::Large};
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) {
    return 2.0 * double(at::numel(s, Operand::Q) + at::numel(s, Operand::K)) * dtype_size(d);
  };
  // 4·B·Hq·S²·D, halved by a causal mask (FlashAttention's convention).
  k.flops = [](const Shape& s) {
    const double full = 4.0 * double(s[at::kBatch] * s[at::kQHeads]) * double(s[at::kSeq]) * double(s[at::kSeq]) *
                        double(s[at::kHeadDim]);
    return at::is_causal(s) ? full / 2 : full;
  };
  k.grid = at::blocks;
  k.row_count = at::query_rows;
  k.col_count = [](const Shape& s) { return s[at::kHeadDim]; };
  k.shape_error = at::shape_error;
  k.launch_help = "extern \"C\" __constant__ int ak_tile_m = ...;  // query rows per block: grid = B * Hq * "
                  "ceil(S / ak_tile_m), one query head after another (b * Hq + h)";
  k.reference_source = reference_prelude() + kReferenceV2;
  k.cpu_reference = cpu_attention_v2;
  k.validation_rows = 256;
  k.output_row_length = [](const Shape& s) { return s[at::kHeadDim]; };
  return k;
}

}  // namespace

const KernelSpec& flash_attention_spec() {
  static const KernelSpec spec = make_v2();
  return spec;
}

const KernelSpec& flash_attention_v1_spec() {
  static const KernelSpec spec = make_v1();
  return spec;
}

}  // namespace ak
