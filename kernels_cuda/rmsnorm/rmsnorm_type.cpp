// rmsnorm: y = x * rsqrt(mean(x^2) + eps) * weight, over the last dimension.
#include <cmath>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

constexpr float kEps = 1e-6f;

const char* kReference = R"(
template <typename T, typename O>
__global__ void rmsnorm_reference(const T* x, const T* weight, O* y, int rows, int cols, float eps) {
  const long long row = blockIdx.x;
  const T* xr = x + row * cols;
  float ss = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) { float f = ref_f(xr[i]); ss += f * f; }
  const float inv = rsqrtf(block_sum(ss) / cols + eps);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) y[row * cols + i] = ref_out<O>(ref_f(xr[i]) * inv * ref_f(weight[i]));
}
)";

std::vector<std::vector<double>> cpu_rmsnorm(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t cols = s.back(), rows = in[0].size() / cols;
  std::vector<double> y(in[0].size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += in[0][r * cols + c] * in[0][r * cols + c];
    double inv = 1.0 / std::sqrt(ss / cols + double(kEps));
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = in[0][r * cols + c] * inv * in[1][c];
  }
  return {y};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "rmsnorm";
  k.summary = "y = x * rsqrt(mean(x^2, last dim) + eps) * weight (torch.nn.functional.rms_norm, eps 1e-6)";
  k.entry = "rmsnorm_kernel";
  k.reference_entry = "rmsnorm_reference";
  k.shape_names = {"rows", "cols"};
  auto all = [](const Shape& s) { return s[0] * s[1]; };
  auto cols = [](const Shape& s) { return s[1]; };
  k.args = {{ArgSpec::Input, "x", all, Fill::Data},
            {ArgSpec::Input, "weight", cols, Fill::Weight},
            {ArgSpec::Output, "y", all},
            {ArgSpec::Dim, "rows", {}, Fill::Data, 0},
            {ArgSpec::Dim, "cols", {}, Fill::Data, 1},
            {ArgSpec::FloatConst, "eps", {}, Fill::Data, 0, kEps}};
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  k.bench_shape = {8192, 8192};
  set_rowwise_stage_shapes(k, {2048, 8192}, {16, 12288});
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) { return double(2 * s[0] * s[1] + s[1]) * dtype_size(d); };
  k.flops = [](const Shape& s) { return 4.0 * s[0] * s[1]; };
  k.grid = rowwise_grid;
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_rmsnorm;
  return k;
}

}  // namespace

const KernelSpec& rmsnorm_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
