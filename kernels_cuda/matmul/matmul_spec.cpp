// matmul: c[m, n] = sum_k a[m, k] b[k, n], row-major, fp32 accumulation (torch.matmul).
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"
#include "kernels_cuda/tiled_grid.hpp"

namespace ak {
namespace {

// One block of 256 threads per 256 columns of a sampled row; a's row is staged in shared memory.
const char* kReference = R"(
template <typename T, typename O>
__global__ void matmul_reference(const T* a, const T* b, O* c, int M, int N, int K, const int* rows) {
  const int per_row = (N + 255) / 256;
  const long long slot = blockIdx.x / per_row;
  const long long row = rows ? rows[slot] : slot;
  const int col = (blockIdx.x % per_row) * 256 + threadIdx.x;
  __shared__ float arow[256];
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += 256) {
    __syncthreads();
    if (k0 + threadIdx.x < K) arow[threadIdx.x] = ref_f(a[row * K + k0 + threadIdx.x]);
    __syncthreads();
    const int n = min(256, K - k0);
    if (col < N)
      for (int k = 0; k < n; ++k) acc = fmaf(arow[k], ref_f(b[(long long)(k0 + k) * N + col]), acc);
  }
  if (col < N) c[slot * N + col] = ref_out<O>(acc);
}
)";

std::vector<std::vector<double>> cpu_matmul(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t M = s[0], N = s[1], K = s[2];
  std::vector<double> c(static_cast<size_t>(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      const double a = in[0][size_t(m * K + k)];
      for (int64_t n = 0; n < N; ++n) c[size_t(m * N + n)] += a * in[1][size_t(k * N + n)];
    }
  return {c};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "matmul";
  k.summary = "c = a @ b (torch.matmul), a[M,K] b[K,N] row-major, fp32 accumulation on tensor cores";
  k.entry = "matmul_kernel";
  k.reference_entry = "matmul_reference";
  k.shape_names = {"M", "N", "K"};
  ArgSpec b{ArgSpec::Input, "b", [](const Shape& s) { return s[2] * s[1]; }, Fill::FanIn, 2};
  k.args = {{ArgSpec::Input, "a", [](const Shape& s) { return s[0] * s[2]; }, Fill::Data},
            b,
            {ArgSpec::Output, "c", [](const Shape& s) { return s[0] * s[1]; }},
            {ArgSpec::Dim, "M", {}, Fill::Data, 0},
            {ArgSpec::Dim, "N", {}, Fill::Data, 1},
            {ArgSpec::Dim, "K", {}, Fill::Data, 2}};
  // Rows as TMA sees them (docs/kernel-contract.md, tensor maps): a is M x K, b K x N, c M x N.
  k.args[0].row_length = [](const Shape& s) { return s[2]; };
  k.args[1].row_length = k.args[2].row_length = [](const Shape& s) { return s[1]; };
  k.dtypes = {DType::F16, DType::BF16};
  k.metric = Metric::TFLOPS;
  k.bench_shape = {4096, 4096, 4096};
  k.smoke_shape = {64, 64, 64};
  k.sweep_shapes = {{128, 128, 128}, {256, 384, 512},  {512, 512, 512},  {100, 200, 300},   {1024, 1024, 1024},
                    {777, 1111, 555}, {2048, 2048, 2048}, {64, 4096, 4096}, {4096, 64, 1024}, {4096, 4096, 4096}};
  k.stability_shape = {256, 256, 1024};
  k.determinism_shape = {1024, 1024, 1024};
  k.edge_shapes = {{1, 1, 1}, {1, 4096, 4096}, {3, 5, 7}, {17, 33, 65}, {129, 257, 31}, {1, 1, 65536}, {16, 16, 8192}};
  // Near-max values overflow every fp16 product, in PyTorch as well: they would test infinities only.
  k.stability_recipes = {Recipe::Tiny, Recipe::OneHuge, Recipe::ConstantRows, Recipe::MixedSigns};
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) { return double(s[0] * s[2] + s[2] * s[1] + s[0] * s[1]) * dtype_size(d); };
  k.flops = [](const Shape& s) { return 2.0 * s[0] * s[1] * s[2]; };
  k.grid = [](const Shape& s, const LaunchGeometry& g) { return tiled_grid(s[0], s[1], g.tile_m, g.tile_n); };
  k.launch_help = "extern \"C\" __constant__ int ak_tile_m = ..., ak_tile_n = ...;  // a tile of c per block: grid = ceil(M / ak_tile_m) * ceil(N / ak_tile_n), tiles row-major";
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_matmul;
  k.validation_rows = 64;
  k.output_row_length = [](const Shape& s) { return s[1]; };
  k.reference_blocks_per_row = [](const Shape& s) { return (s[1] + 255) / 256; };
  k.baseline = Baseline::Cublas;
  k.cublas_gemms = [](const Shape& s) { return std::vector<GemmShape>{{s[0], s[1], s[2]}}; };
  return k;
}

}  // namespace

const KernelSpec& matmul_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
