// fused_mlp: out = (silu(x w_gate) * (x w_up)) w_down, the SwiGLU MLP of LLaMA-style models, with
// x[M, K], w_gate and w_up [K, I], w_down [I, K], all row-major, fp32 accumulation.
#include <cmath>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"
#include "kernels_cuda/tiled_grid.hpp"

namespace ak {
namespace {

// Per sampled row, ceil(I/256) blocks compute its hidden row (fp32, into the scratch buffer),
// then ceil(K/256) blocks compute its output once a counter says the hidden row is complete.
// Blocks only wait for blocks of lower index, which run first, so the wait always ends. The last
// output block of a row sets its counters back to zero.
const char* kReference = R"(
template <typename T, typename O>
__global__ void fused_mlp_reference(const T* x, const T* wg, const T* wu, const T* wd, O* out, float* hidden,
                                    unsigned int* counters, int M, int K, int I, const int* rows) {
  const int hidden_blocks = (I + 255) / 256, out_blocks = (K + 255) / 256;
  const long long slot = blockIdx.x / (hidden_blocks + out_blocks);
  const int part = blockIdx.x % (hidden_blocks + out_blocks);
  const long long row = rows ? rows[slot] : slot;
  float* h = hidden + slot * I;
  __shared__ float stage[256];
  if (part < hidden_blocks) {
    const int i = part * 256 + threadIdx.x;
    float g = 0.f, u = 0.f;
    for (int k0 = 0; k0 < K; k0 += 256) {
      __syncthreads();
      if (k0 + threadIdx.x < K) stage[threadIdx.x] = ref_f(x[row * K + k0 + threadIdx.x]);
      __syncthreads();
      if (i < I)
        for (int k = 0; k < min(256, K - k0); ++k) {
          g = fmaf(stage[k], ref_f(wg[(long long)(k0 + k) * I + i]), g);
          u = fmaf(stage[k], ref_f(wu[(long long)(k0 + k) * I + i]), u);
        }
    }
    if (i < I) h[i] = g / (1.f + expf(-g)) * u;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(&counters[slot], 1u);
    return;
  }
  if (threadIdx.x == 0)
    while (atomicAdd(&counters[slot], 0u) < (unsigned)hidden_blocks) {
    }
  __syncthreads();
  __threadfence();
  const int n = (part - hidden_blocks) * 256 + threadIdx.x;
  float acc = 0.f;
  for (int i0 = 0; i0 < I; i0 += 256) {
    __syncthreads();
    if (i0 + threadIdx.x < I) stage[threadIdx.x] = __ldcg(&h[i0 + threadIdx.x]);
    __syncthreads();
    if (n < K)
      for (int i = 0; i < min(256, I - i0); ++i) acc = fmaf(stage[i], ref_f(wd[(long long)(i0 + i) * K + n]), acc);
  }
  if (n < K) out[slot * K + n] = ref_out<O>(acc);
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(&counters[M + slot], 1u) == (unsigned)out_blocks - 1) {
    counters[slot] = 0;
    counters[M + slot] = 0;
  }
}
)";

std::vector<std::vector<double>> cpu_fused_mlp(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t M = s[0], K = s[1], I = s[2];
  const auto &x = in[0], &wg = in[1], &wu = in[2], &wd = in[3];
  std::vector<double> out(static_cast<size_t>(M * K), 0.0), g(static_cast<size_t>(I)), u(static_cast<size_t>(I));
  for (int64_t m = 0; m < M; ++m) {
    std::fill(g.begin(), g.end(), 0.0);
    std::fill(u.begin(), u.end(), 0.0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < I; ++i) {
        g[size_t(i)] += x[size_t(m * K + k)] * wg[size_t(k * I + i)];
        u[size_t(i)] += x[size_t(m * K + k)] * wu[size_t(k * I + i)];
      }
    for (int64_t i = 0; i < I; ++i) {
      const double h = g[size_t(i)] / (1.0 + std::exp(-g[size_t(i)])) * u[size_t(i)];
      for (int64_t n = 0; n < K; ++n) out[size_t(m * K + n)] += h * wd[size_t(i * K + n)];
    }
  }
  return {out};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "fused_mlp";
  k.summary = "out = (silu(x @ w_gate) * (x @ w_up)) @ w_down (SwiGLU), x[M,K] w_gate/w_up[K,I] w_down[I,K], one launch";
  k.entry = "fused_mlp_kernel";
  k.reference_entry = "fused_mlp_reference";
  k.shape_names = {"M", "K", "I"};
  auto weight = [](const Shape& s) { return s[1] * s[2]; };
  ArgSpec hidden{ArgSpec::Scratch, "hidden", [](const Shape& s) { return s[0] * s[2]; }};
  hidden.elem = Elem::F32;
  ArgSpec counters{ArgSpec::Counters, "counters", [](const Shape& s) { return 2 * s[0]; }};
  counters.elem = Elem::U32;
  k.args = {{ArgSpec::Input, "x", [](const Shape& s) { return s[0] * s[1]; }, Fill::Data},
            {ArgSpec::Input, "w_gate", weight, Fill::FanIn, 1},
            {ArgSpec::Input, "w_up", weight, Fill::FanIn, 1},
            {ArgSpec::Input, "w_down", weight, Fill::FanIn, 2},
            {ArgSpec::Output, "out", [](const Shape& s) { return s[0] * s[1]; }},
            hidden,
            counters,
            {ArgSpec::Dim, "M", {}, Fill::Data, 0},
            {ArgSpec::Dim, "K", {}, Fill::Data, 1},
            {ArgSpec::Dim, "I", {}, Fill::Data, 2}};
  // Rows as TMA sees them: x, w_down and out have rows of K, w_gate, w_up and hidden rows of I.
  for (size_t i : {0, 3, 4}) k.args[i].row_length = [](const Shape& s) { return s[1]; };
  for (size_t i : {1, 2, 5}) k.args[i].row_length = [](const Shape& s) { return s[2]; };
  k.dtypes = {DType::F16, DType::BF16};
  k.metric = Metric::TFLOPS;
  k.bench_shape = {4096, 4096, 11008};
  k.smoke_shape = {64, 64, 128};
  k.sweep_shapes = {{32, 64, 96},     {128, 256, 512},   {256, 512, 1024},   {100, 96, 200},
                    {512, 1024, 2816}, {1000, 512, 1376}, {2048, 2048, 5504}, {4096, 4096, 11008}};
  k.stability_shape = {256, 512, 1376};
  k.determinism_shape = {1024, 1024, 2816};
  k.edge_shapes = {{1, 1, 1},     {1, 4096, 11008}, {3, 5, 7},     {17, 33, 65},
                   {129, 64, 100}, {2, 8, 65536},   {4096, 64, 64}, {33, 4096, 256}};
  // The hidden activations are stored in T by a fused kernel (PyTorch's eager path too): inputs
  // that push them past fp16's range (near-max, one-huge, mixed-sign, large) overflow in any
  // correct kernel and test nothing.
  k.stability_recipes = {Recipe::Tiny, Recipe::ConstantRows};
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) { return double(2 * s[0] * s[1] + 3 * s[1] * s[2]) * dtype_size(d); };
  k.flops = [](const Shape& s) { return 6.0 * double(s[0]) * double(s[1]) * double(s[2]); };
  k.grid = [](const Shape& s, const LaunchGeometry& g) { return tiled_grid(s[0], s[2], g.tile_m, g.tile_n) + tiled_grid(s[0], s[1], g.tile_m, g.tile_n); };
  k.launch_help = "extern \"C\" __constant__ int ak_tile_m = ..., ak_tile_n = ...;  // grid = ceil(M / ak_tile_m) * ceil(I / ak_tile_n) + ceil(M / ak_tile_m) * ceil(K / ak_tile_n): the gate/up tiles, then the down tiles";
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_fused_mlp;
  k.validation_rows = 32;
  k.output_row_length = [](const Shape& s) { return s[1]; };
  k.reference_blocks_per_row = [](const Shape& s) { return (s[2] + 255) / 256 + (s[1] + 255) / 256; };
  k.baseline = Baseline::Cublas;
  k.cublas_gemms = [](const Shape& s) {
    return std::vector<GemmShape>{{s[0], s[2], s[1]}, {s[0], s[2], s[1]}, {s[0], s[1], s[2]}};
  };
  return k;
}

}  // namespace

const KernelSpec& fused_mlp_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
