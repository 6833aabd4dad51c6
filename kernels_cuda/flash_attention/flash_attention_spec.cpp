// flash_attention: o = softmax(q k^T / sqrt(D) + causal mask) v per (batch, head), like
// F.scaled_dot_product_attention(q, k, v, is_causal=True) on q, k, v, o of shape [B, H, S, D].
#include <algorithm>
#include <cmath>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"
#include "kernels_cuda/tiled_grid.hpp"

namespace ak {
namespace {

constexpr int kMaxSeq = 8192;  // the reference keeps one query row's scores in shared memory

// One block of 256 threads per sampled query row: warps over keys (lanes over D) for the scores,
// then the softmax in shared memory, then threads over D for the weighted sum of v.
const char* kReference = R"(
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

KernelSpec make() {
  KernelSpec k;
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
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_attention;
  k.validation_rows = 256;
  k.output_row_length = [](const Shape& s) { return s[3]; };
  return k;
}

}  // namespace

const KernelSpec& flash_attention_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
