// reduce: y[r] = sum(x[r, :]), over the last dimension.
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

// The sum accumulates in double: in fp32, 256 threads adding 1024 values each of a 262144-wide
// row (an edge shape) drift by about 1e-3 where the row sum cancels, past fp32's tolerance, and a
// candidate more accurate than the reference was judged wrong.
const char* kReference = R"(
template <typename T, typename O>
__global__ void reduce_reference(const T* x, O* y, int rows, int cols) {
  const long long row = blockIdx.x;
  const T* xr = x + row * cols;
  double s = 0.0;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) s += ref_f(xr[i]);
  s = block_sum(s);
  if (threadIdx.x == 0) y[row] = ref_out<O>(float(s));
}
)";

std::vector<std::vector<double>> cpu_reduce(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t cols = s.back(), rows = int64_t(in[0].size()) / cols;
  std::vector<double> y(size_t(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[size_t(r)] += in[0][size_t(r * cols + c)];
  return {y};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "reduce";
  k.summary = "y = sum(x, dim=-1) (torch.sum over the last dimension), fp32 accumulation, bitwise repeatable";
  k.entry = "reduce_kernel";
  k.reference_entry = "reduce_reference";
  k.shape_names = {"rows", "cols"};
  k.args = {{ArgSpec::Input, "x", [](const Shape& s) { return s[0] * s[1]; }, Fill::Data},
            {ArgSpec::Output, "y", [](const Shape& s) { return s[0]; }},
            {ArgSpec::Dim, "rows", {}, Fill::Data, 0},
            {ArgSpec::Dim, "cols", {}, Fill::Data, 1}};
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  k.bench_shape = {16384, 4096};
  set_rowwise_stage_shapes(k, {4096, 4096}, {16, 32768});
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) { return double(s[0] * s[1] + s[0]) * dtype_size(d); };
  k.flops = [](const Shape& s) { return double(s[0] * s[1]); };
  k.grid = rowwise_grid;
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_reduce;
  return k;
}

}  // namespace

const KernelSpec& reduce_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
