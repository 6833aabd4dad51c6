// swiglu: y = silu(gate) * up, elementwise over [rows, cols]: the gate product of a gated MLP
// (transformers' LlamaMLP and its kin: down_proj(act_fn(gate_proj(x)) * up_proj(x))), which eager
// PyTorch runs as two kernels and three round trips to memory.
//   Version 2 (the newest): shape [rows, cols, ld]; row r of gate and of up begins at r * ld, so
//   one file serves both a LlamaMLP's two projections (ld = cols) and the halves of a fused
//   gate_up projection (Phi3MLP's chunk(2, dim=-1): ld = 2 * cols, up = gate + cols). y is dense.
//   Version 1: shape [rows, cols], gate and up dense; kept so that files written for it still load.
#include <cmath>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

// In fp32 like the candidates: g / (1 + exp(-g)) is -0 for a large negative g (exp overflows to
// infinity), the limit, where g * sigmoid(g) computed as 1 / (1 + inf) would be too.
const char* kReferenceV1 = R"(
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

double silu_times(double g, double u) { return g / (1.0 + std::exp(-g)) * u; }

std::vector<std::vector<double>> cpu_swiglu_v1(const Shape&, DType, const std::vector<std::vector<double>>& in) {
  std::vector<double> y(in[0].size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = silu_times(in[0][i], in[1][i]);
  return {y};
}

KernelSpec make_v1() {
  KernelSpec k;
  k.contract_version = 1;
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
  k.reference_source = reference_prelude() + kReferenceV1;
  k.cpu_reference = cpu_swiglu_v1;
  return k;
}

// Version 2: the same sum, each row of gate and up read at r * ld.
const char* kReferenceV2 = R"(
template <typename T, typename O>
__global__ void swiglu_reference(const T* gate, const T* up, O* y, int rows, int cols, int ld) {
  const long long row = blockIdx.x;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    const float g = ref_f(gate[row * ld + i]);
    y[row * cols + i] = ref_out<O>(g / (1.f + expf(-g)) * ref_f(up[row * ld + i]));
  }
}
)";

constexpr size_t kRows = 0, kCols = 1, kLd = 2;

std::vector<std::vector<double>> cpu_swiglu_v2(const Shape& s, DType, const std::vector<std::vector<double>>& in) {
  const int64_t rows = s[kRows], cols = s[kCols], ld = s[kLd];
  std::vector<double> y(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[size_t(r * cols + c)] = silu_times(in[0][size_t(r * ld + c)], in[1][size_t(r * ld + c)]);
  return {y};
}

std::string strided_shape_error(const Shape& s) {
  if (s[kLd] < s[kCols])
    return "swiglu's ld (the row stride of gate and up, " + std::to_string(s[kLd]) + ") is below cols (" +
           std::to_string(s[kCols]) + "): rows would overlap; give ld >= cols";
  if (s[kRows] * s[kLd] > (int64_t(1) << 31) - 1)
    return "swiglu's gate spans rows x ld = " + std::to_string(s[kRows] * s[kLd]) + " elements, past what an int indexes";
  return "";
}

KernelSpec make_v2() {
  KernelSpec k;
  k.contract_version = 2;
  k.type = "swiglu";
  k.summary = "y = silu(gate) * up, elementwise (a gated MLP's act_fn(gate_proj(x)) * up_proj(x), or the halves of a fused "
              "gate_up projection), gate and up rows ld apart, y dense, fp32 math, one rounding";
  k.entry = "swiglu_kernel";
  k.reference_entry = "swiglu_reference";
  k.shape_names = {"rows", "cols", "ld"};
  // The operands span every row's ld elements: what lies between cols and ld is the other half of
  // a fused projection, which the kernel must neither read as its own nor write.
  auto strided = [](const Shape& s) { return s[kRows] * s[kLd]; };
  auto dense = [](const Shape& s) { return s[kRows] * s[kCols]; };
  k.args = {{ArgSpec::Input, "gate", strided, Fill::Data},
            {ArgSpec::Input, "up", strided, Fill::Data},
            {ArgSpec::Output, "y", dense},
            {ArgSpec::Dim, "rows", {}, Fill::Data, int(kRows)},
            {ArgSpec::Dim, "cols", {}, Fill::Data, int(kCols)},
            {ArgSpec::Dim, "ld", {}, Fill::Data, int(kLd)}};
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  k.row_count = [](const Shape& s) { return s[kRows]; };
  k.col_count = [](const Shape& s) { return s[kLd]; };  // the recipes fill the operands' rows, ld long
  k.shape_error = strided_shape_error;
  // LLaMA-7B's MLP on 4096 tokens, its two projections apart; the models' own shapes come from a profile.
  k.bench_shape = {4096, 11008, 11008};
  k.launch_help = "extern \"C\" __constant__ int ak_rows_per_block = ...;  // rows per block: grid = ceil(rows / ak_rows_per_block)";
  // Half the shapes with ld > cols: a fused projection's halves (ld = 2 cols) and strides that
  // break vector alignment (ld odd, or cols plus a few), so a kernel that ignores ld fails.
  k.smoke_shape = {8, 512, 1024};
  k.sweep_shapes = {{32, 128, 128},    {64, 768, 1536},    {128, 1024, 1024}, {256, 2048, 4096},
                    {100, 3000, 3001}, {512, 4096, 4096},  {1024, 5120, 10240}, {77, 8192, 8200},
                    {2048, 5632, 11264}, {16, 65536, 65536}};
  k.stability_shape = {256, 4096, 8192};
  k.determinism_shape = {2048, 5632, 11264};
  k.edge_shapes = {{1, 1, 1},           {1, 7, 14},         {3, 33, 35},  {17, 1000, 1000}, {5, 4097, 8194},
                   {1, 65536, 65536},   {4, 262144, 262144}, {1031, 257, 514}, {2, 8, 9}};
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) { return 3.0 * double(s[kRows] * s[kCols]) * dtype_size(d); };
  k.flops = [](const Shape& s) { return 5.0 * double(s[kRows] * s[kCols]); };
  k.grid = first_dim_grid;
  k.reference_source = reference_prelude() + kReferenceV2;
  k.cpu_reference = cpu_swiglu_v2;
  return k;
}

}  // namespace

const KernelSpec& swiglu_spec() {
  static const KernelSpec spec = make_v2();
  return spec;
}

const KernelSpec& swiglu_v1_spec() {
  static const KernelSpec spec = make_v1();
  return spec;
}

}  // namespace ak
