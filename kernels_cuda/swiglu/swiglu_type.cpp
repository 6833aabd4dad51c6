// swiglu: y = silu(gate) * up, elementwise over [rows, cols]: the gate product of a gated MLP
// (transformers' LlamaMLP and its kin: down_proj(act_fn(gate_proj(x)) * up_proj(x))), which eager
// PyTorch runs as two kernels and three round trips to memory.
#include <cmath>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

// In fp32 like the candidates: g / (1 + exp(-g)) is -0 for a large negative g (exp overflows to
// infinity), the limit, where g * sigmoid(g) computed as 1 / (1 + inf) would be too.
const char* kReference = R"(
template <typename T, typename O>
__global__ void swiglu_reference(const T* gate, const T* up, O* y, int rows, int cols) {
  const long long row = blockIdx.x;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    const long long at = row * cols + i;
    const float g = ref_f(gate[at]);
    y[at] = ref_out<O>(g / (1.f + expf(-g)) * ref_f(up[at]));
  }
}
)";

std::vector<std::vector<double>> cpu_swiglu(const Shape&, DType, const std::vector<std::vector<double>>& in) {
  std::vector<double> y(in[0].size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = in[0][i] / (1.0 + std::exp(-in[0][i])) * in[1][i];
  return {y};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "swiglu";
  k.summary = "y = silu(gate) * up, elementwise (a gated MLP's act_fn(gate_proj(x)) * up_proj(x)), fp32 math, one rounding";
  k.entry = "swiglu_kernel";
  k.reference_entry = "swiglu_reference";
  k.shape_names = {"rows", "cols"};
  auto all = [](const Shape& s) { return s[0] * s[1]; };
  k.args = {{ArgSpec::Input, "gate", all, Fill::Data},
            {ArgSpec::Input, "up", all, Fill::Data},
            {ArgSpec::Output, "y", all},
            {ArgSpec::Dim, "rows", {}, Fill::Data, 0},
            {ArgSpec::Dim, "cols", {}, Fill::Data, 1}};
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  // LLaMA-7B's MLP on 4096 tokens; the models' own shapes come from a profile.
  k.bench_shape = {4096, 11008};
  set_rowwise_stage_shapes(k, {2048, 5632}, {16, 65536});
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) { return 3.0 * double(s[0] * s[1]) * dtype_size(d); };
  k.flops = [](const Shape& s) { return 5.0 * double(s[0] * s[1]); };
  k.grid = rowwise_grid;
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_swiglu;
  return k;
}

}  // namespace

const KernelSpec& swiglu_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
