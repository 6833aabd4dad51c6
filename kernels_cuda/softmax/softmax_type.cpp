// softmax: y = exp(x - max(x)) / sum(exp(x - max(x))), over the last dimension.
#include <algorithm>
#include <cmath>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

const char* kReference = R"(
template <typename T, typename O>
__global__ void softmax_reference(const T* x, O* y, int rows, int cols) {
  const long long row = blockIdx.x;
  const T* xr = x + row * cols;
  float m = __int_as_float(0xff800000);  // -inf; NVRTC has no INFINITY macro
  for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, ref_f(xr[i]));
  m = block_max(m);
  float s = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += expf(ref_f(xr[i]) - m);
  s = block_sum(s);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) y[row * cols + i] = ref_out<O>(expf(ref_f(xr[i]) - m) / s);
}
)";

std::vector<std::vector<double>> cpu_softmax(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t cols = s.back(), rows = in[0].size() / cols;
  std::vector<double> y(in[0].size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* x = &in[0][r * cols];
    double m = *std::max_element(x, x + cols), sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[c] - m);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(x[c] - m) / sum;
  }
  return {y};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "softmax";
  k.summary = "y = softmax(x, dim=-1) (torch.softmax over the last dimension)";
  k.entry = "softmax_kernel";
  k.reference_entry = "softmax_reference";
  k.shape_names = {"rows", "cols"};
  auto all = [](const Shape& s) { return s[0] * s[1]; };
  k.args = {{ArgSpec::Input, "x", all, Fill::Data},
            {ArgSpec::Output, "y", all},
            {ArgSpec::Dim, "rows", {}, Fill::Data, 0},
            {ArgSpec::Dim, "cols", {}, Fill::Data, 1}};
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  k.bench_shape = {8192, 8192};
  set_rowwise_stage_shapes(k, {2048, 8192}, {16, 32768});
  k.tolerance = tight_tolerance;
  k.bytes = [](const Shape& s, DType d) { return double(2 * s[0] * s[1]) * dtype_size(d); };
  k.flops = [](const Shape& s) { return 5.0 * s[0] * s[1]; };
  k.grid = rowwise_grid;
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_softmax;
  return k;
}

}  // namespace

const KernelSpec& softmax_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
