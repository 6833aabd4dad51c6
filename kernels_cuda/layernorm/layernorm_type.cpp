// layernorm: y = (x - mean) * rsqrt(var + eps) * weight + bias, over the last dimension.
#include <cmath>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

constexpr float kEps = 1e-5f;  // torch.nn.functional.layer_norm's default

const char* kReference = R"(
template <typename T, typename O>
__global__ void layernorm_reference(const T* x, const T* weight, const T* bias, O* y, int rows, int cols, float eps) {
  const long long row = blockIdx.x;
  const T* xr = x + row * cols;
  float s = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += ref_f(xr[i]);
  const float mean = block_sum(s) / cols;
  float ss = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) { float d = ref_f(xr[i]) - mean; ss += d * d; }
  const float inv = rsqrtf(block_sum(ss) / cols + eps);
  for (int i = threadIdx.x; i < cols; i += blockDim.x)
    y[row * cols + i] = ref_out<O>((ref_f(xr[i]) - mean) * inv * ref_f(weight[i]) + ref_f(bias[i]));
}
)";

std::vector<std::vector<double>> cpu_layernorm(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t cols = s.back(), rows = int64_t(in[0].size()) / cols;
  std::vector<double> y(in[0].size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* x = &in[0][size_t(r * cols)];
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[c];
    mean /= double(cols);
    for (int64_t c = 0; c < cols; ++c) var += (x[c] - mean) * (x[c] - mean);
    const double inv = 1.0 / std::sqrt(var / double(cols) + double(kEps));
    for (int64_t c = 0; c < cols; ++c) y[size_t(r * cols + c)] = (x[c] - mean) * inv * in[1][size_t(c)] + in[2][size_t(c)];
  }
  return {y};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "layernorm";
  k.summary = "y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension (F.layer_norm, eps 1e-5)";
  k.entry = "layernorm_kernel";
  k.reference_entry = "layernorm_reference";
  k.shape_names = {"rows", "cols"};
  auto all = [](const Shape& s) { return s[0] * s[1]; };
  auto cols = [](const Shape& s) { return s[1]; };
  k.args = {{ArgSpec::Input, "x", all, Fill::Data},
            {ArgSpec::Input, "weight", cols, Fill::Weight},
            {ArgSpec::Input, "bias", cols, Fill::Bias},
            {ArgSpec::Output, "y", all},
            {ArgSpec::Dim, "rows", {}, Fill::Data, 0},
            {ArgSpec::Dim, "cols", {}, Fill::Data, 1},
            {ArgSpec::FloatConst, "eps", {}, Fill::Data, 0, kEps}};
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  k.bench_shape = {8192, 8192};
  set_rowwise_stage_shapes(k, {2048, 8192}, {16, 12288});
  k.tolerance = tight_tolerance;
  k.bytes = [](const Shape& s, DType d) { return double(2 * s[0] * s[1] + 2 * s[1]) * dtype_size(d); };
  k.flops = [](const Shape& s) { return 8.0 * s[0] * s[1]; };
  k.grid = rowwise_grid;
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_layernorm;
  return k;
}

}  // namespace

const KernelSpec& layernorm_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
