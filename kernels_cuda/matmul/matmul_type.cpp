// matmul.
//   Version 2 (the newest): y = x W^T (+ bias), as torch.nn.Linear computes it: x [M, K], W [N, K]
//   as a Linear stores its weight, bias [N] where the shape says so; fp16, bf16 and fp32.
//   Version 1: c = a @ b with b [K, N] row-major (torch.matmul), fp16 and bf16; kept so that files
//   and run folders written for it still load.
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"
#include "kernels_cuda/tiled_grid.hpp"

namespace ak {
namespace {

// One block of 256 threads per 256 columns of a sampled row; a's row is staged in shared memory.
const char* kReferenceV1 = R"(
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

std::vector<std::vector<double>> cpu_matmul_v1(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t M = s[0], N = s[1], K = s[2];
  std::vector<double> c(static_cast<size_t>(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      const double a = in[0][size_t(m * K + k)];
      for (int64_t n = 0; n < N; ++n) c[size_t(m * N + n)] += a * in[1][size_t(k * N + n)];
    }
  return {c};
}

KernelSpec make_v1() {
  KernelSpec k;
  k.contract_version = 1;
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
  k.reference_source = reference_prelude() + kReferenceV1;
  k.cpu_reference = cpu_matmul_v1;
  k.validation_rows = 64;
  k.output_row_length = [](const Shape& s) { return s[1]; };
  k.reference_blocks_per_row = [](const Shape& s) { return (s[1] + 255) / 256; };
  k.baseline = Baseline::Cublas;
  k.cublas_gemms = [](const Shape& s) { return std::vector<GemmShape>{{s[0], s[1], s[2]}}; };
  return k;
}

// Version 2. One block of 256 threads per 256 columns of a sampled row, as in version 1; W's rows
// are K-contiguous, so each step stages a 256 x 32 slice of W in shared memory (read along K,
// padded against bank conflicts) and x's 32 elements of the row. The sum runs along K in order
// (fp32 FMA), then the bias is added once, as a Linear's epilogue does.
const char* kReferenceV2 = R"(
template <typename T, typename O>
__global__ void matmul_reference(const T* x, const T* w, const T* bias, O* y, float* workspace, unsigned* tile_counters,
                                 int M, int N, int K, int has_bias, const int* rows) {
  const int per_row = (N + 255) / 256;
  const long long slot = blockIdx.x / per_row;
  const long long row = rows ? rows[slot] : slot;
  const int col0 = (blockIdx.x % per_row) * 256;
  const int col = col0 + threadIdx.x;
  __shared__ float xs[32];
  __shared__ float ws[256][33];
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += 32) {
    __syncthreads();
    if (threadIdx.x < 32) xs[threadIdx.x] = k0 + threadIdx.x < K ? ref_f(x[row * K + k0 + threadIdx.x]) : 0.f;
    for (int i = threadIdx.x; i < 256 * 32; i += 256) {
      const int c = i / 32, kk = i % 32;
      ws[c][kk] = (col0 + c < N && k0 + kk < K) ? ref_f(w[(long long)(col0 + c) * K + k0 + kk]) : 0.f;
    }
    __syncthreads();
    const int n = min(32, K - k0);
    for (int k = 0; k < n; ++k) acc = fmaf(xs[k], ws[threadIdx.x][k], acc);
  }
  if (col < N) y[slot * N + col] = ref_out<O>(has_bias ? acc + ref_f(bias[col]) : acc);
}
)";

constexpr size_t kHasBias = 3;   // the shape's last entry: 1 when the Linear has a bias

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t kSchedulerCounters = 32;

std::vector<std::vector<double>> cpu_linear(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t M = s[0], N = s[1], K = s[2];
  const bool has_bias = s[kHasBias] != 0;
  std::vector<double> y(static_cast<size_t>(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = has_bias ? in[2][size_t(n)] : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += in[0][size_t(m * K + k)] * in[1][size_t(n * K + k)];
      y[size_t(m * N + n)] = acc;
    }
  return {y};
}

std::string linear_shape_error(const Shape& s) {
  if (s[kHasBias] != 0 && s[kHasBias] != 1)
    return "the last entry of a matmul shape says whether the Linear has a bias: 0 or 1, not " + std::to_string(s[kHasBias]);
  return "";
}

KernelSpec make_v2() {
  KernelSpec k;
  k.type = "matmul";
  k.contract_version = 2;
  k.summary = "y = x W^T (+ bias), as torch.nn.Linear computes it: x[M,K], W[N,K] (the Linear's weight), bias[N], "
              "fp32 accumulation";
  k.entry = "matmul_kernel";
  k.reference_entry = "matmul_reference";
  k.shape_names = {"M", "N", "K", "has_bias"};
  // The bias is always a buffer of N values (drawn nonzero), so a file that adds it where the
  // shape says there is none fails; an exported op without one passes any pointer and 0.
  // Split-K and stream-K need a place for partial sums and a way to tell the last contributor of a
  // tile: an fp32 workspace laid out as y ([M, N]), undefined at every launch, and counters, zero
  // at every launch and left zero: one per 64 x 64 block of y (any tile of 64 x 64 or more has
  // one of its own) and kSchedulerCounters more for the kernel's own bookkeeping (a dynamic tile
  // scheduler's ticket and its count of finished blocks).
  ArgSpec workspace{ArgSpec::Scratch, "workspace", [](const Shape& s) { return s[0] * s[1]; }};
  workspace.elem = Elem::F32;
  ArgSpec counters{ArgSpec::Counters, "tile_counters",
                   [](const Shape& s) { return ceil_div(s[0], 64) * ceil_div(s[1], 64) + kSchedulerCounters; }};
  counters.elem = Elem::U32;
  k.args = {{ArgSpec::Input, "x", [](const Shape& s) { return s[0] * s[2]; }, Fill::Data},
            {ArgSpec::Input, "w", [](const Shape& s) { return s[1] * s[2]; }, Fill::FanIn, 2},
            {ArgSpec::Input, "bias", [](const Shape& s) { return s[1]; }, Fill::Bias},
            {ArgSpec::Output, "y", [](const Shape& s) { return s[0] * s[1]; }},
            workspace,
            counters,
            {ArgSpec::Dim, "M", {}, Fill::Data, 0},
            {ArgSpec::Dim, "N", {}, Fill::Data, 1},
            {ArgSpec::Dim, "K", {}, Fill::Data, 2},
            {ArgSpec::Dim, "has_bias", {}, Fill::Data, int(kHasBias)}};
  // Rows as TMA sees them (docs/kernel-contract.md, tensor maps): x is M x K, w N x K (K-major,
  // the layout wgmma reads without a transpose), y M x N.
  k.args[0].row_length = k.args[1].row_length = [](const Shape& s) { return s[2]; };
  k.args[3].row_length = k.args[4].row_length = [](const Shape& s) { return s[1]; };
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  k.metric = Metric::TFLOPS;
  k.bench_shape = {4096, 4096, 4096, 0};
  k.smoke_shape = {64, 64, 64, 1};
  k.sweep_shapes = {{128, 128, 128, 1}, {256, 384, 512, 0},   {512, 512, 512, 1},   {100, 200, 300, 1},
                    {1024, 1024, 1024, 0}, {777, 1111, 555, 1}, {2048, 2048, 2048, 1}, {64, 4096, 4096, 0},
                    {4096, 64, 1024, 1}, {4096, 4096, 4096, 0}};
  k.stability_shape = {256, 256, 1024, 1};
  k.determinism_shape = {1024, 1024, 1024, 1};
  k.edge_shapes = {{1, 1, 1, 1},    {1, 4096, 4096, 0}, {3, 5, 7, 1},      {17, 33, 65, 0},
                   {129, 257, 31, 1}, {1, 1, 65536, 1},  {16, 16, 8192, 0}, {2, 3, 4, 0}};
  k.stability_recipes = {Recipe::Tiny, Recipe::OneHuge, Recipe::ConstantRows, Recipe::MixedSigns};
  k.tolerance = design_tolerance;
  k.shape_error = linear_shape_error;
  k.zero_dims = {kHasBias};
  // The shape ends in has_bias, not in a row length: rows and columns are said here, as version 1's
  // shape [M, N, K] implied them (an input's rows of K; has_bias 0 as a column count divides by zero).
  k.row_count = [](const Shape& s) { return s[0] * s[1]; };
  k.col_count = [](const Shape& s) { return s[2]; };
  k.bytes = [](const Shape& s, DType d) {
    return double(s[0] * s[2] + s[1] * s[2] + s[0] * s[1] + s[kHasBias] * s[1]) * dtype_size(d);
  };
  k.flops = [](const Shape& s) { return 2.0 * s[0] * s[1] * s[2]; };
  k.grid = [](const Shape& s, const LaunchGeometry& g) { return tiled_grid(s[0], s[1], g.tile_m, g.tile_n); };
  k.launch_help = "extern \"C\" __constant__ int ak_tile_m = ..., ak_tile_n = ...;  // a tile of y per block: grid = ceil(M / ak_tile_m) * ceil(N / ak_tile_n), tiles row-major";
  k.reference_source = reference_prelude() + kReferenceV2;
  k.cpu_reference = cpu_linear;
  k.validation_rows = 64;
  k.output_row_length = [](const Shape& s) { return s[1]; };
  k.reference_blocks_per_row = [](const Shape& s) { return (s[1] + 255) / 256; };
  k.baseline = Baseline::Cublas;
  // cuBLAS without its bias epilogue: the bias is N values against M x N x K multiply-adds.
  k.cublas_gemms = [](const Shape& s) { return std::vector<GemmShape>{{s[0], s[1], s[2], true}}; };
  return k;
}

}  // namespace

const KernelSpec& matmul_spec() {
  static const KernelSpec spec = make_v2();
  return spec;
}

const KernelSpec& matmul_v1_spec() {
  static const KernelSpec spec = make_v1();
  return spec;
}

}  // namespace ak
