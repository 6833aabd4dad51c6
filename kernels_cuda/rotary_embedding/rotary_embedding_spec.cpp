// rotary_embedding: RoPE, rotate-half convention, on q[B, H, S, D] with cos and sin [S, D/2].
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

const char* kReference = R"(
template <typename T, typename O>
__global__ void rotary_embedding_reference(const T* q, const T* cos, const T* sin, O* out, int batch, int heads,
                                           int seq, int head_dim) {
  const long long row = blockIdx.x;
  const int half = head_dim / 2;
  const long long s = row % seq;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float x1 = ref_f(q[row * head_dim + i]), x2 = ref_f(q[row * head_dim + i + half]);
    const float c = ref_f(cos[s * half + i]), sn = ref_f(sin[s * half + i]);
    out[row * head_dim + i] = ref_out<O>(x1 * c - x2 * sn);
    out[row * head_dim + i + half] = ref_out<O>(x2 * c + x1 * sn);
  }
}
)";

int64_t all(const Shape& s) { return s[0] * s[1] * s[2] * s[3]; }
int64_t table(const Shape& s) { return s[2] * s[3] / 2; }

std::vector<std::vector<double>> cpu_rotary(const Shape& shape, DType, const std::vector<std::vector<double>>& in) {
  const int64_t seq = shape[2], d = shape[3], half = d / 2, rows = all(shape) / d;
  std::vector<double> y(size_t(all(shape)));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t s = r % seq;
    for (int64_t i = 0; i < half; ++i) {
      const double x1 = in[0][size_t(r * d + i)], x2 = in[0][size_t(r * d + i + half)];
      const double c = in[1][size_t(s * half + i)], sn = in[2][size_t(s * half + i)];
      y[size_t(r * d + i)] = x1 * c - x2 * sn;
      y[size_t(r * d + i + half)] = x2 * c + x1 * sn;
    }
  }
  return {y};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "rotary_embedding";
  k.summary = "RoPE, rotate-half convention: out = q * cos + rotate_half(q) * sin, cos/sin [seq, head_dim/2]";
  k.entry = "rotary_embedding_kernel";
  k.reference_entry = "rotary_embedding_reference";
  k.shape_names = {"batch", "heads", "seq", "head_dim"};
  k.args = {{ArgSpec::Input, "q", all, Fill::Data},
            {ArgSpec::Input, "cos", table, Fill::Weight},
            {ArgSpec::Input, "sin", table, Fill::Bias},
            {ArgSpec::Output, "out", all},
            {ArgSpec::Dim, "batch", {}, Fill::Data, 0},
            {ArgSpec::Dim, "heads", {}, Fill::Data, 1},
            {ArgSpec::Dim, "seq", {}, Fill::Data, 2},
            {ArgSpec::Dim, "head_dim", {}, Fill::Data, 3}};
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  k.bench_shape = {4, 32, 4096, 128};
  // head_dim is even: the rotation pairs its halves.
  k.smoke_shape = {1, 2, 8, 64};
  k.sweep_shapes = {{1, 1, 1, 64},    {2, 4, 16, 64},   {1, 8, 128, 128}, {2, 2, 100, 96},   {3, 5, 77, 128},
                    {1, 32, 512, 128}, {4, 8, 256, 64}, {2, 16, 1024, 128}, {1, 1, 2048, 256}, {4, 32, 64, 128}};
  k.stability_shape = {2, 8, 64, 128};
  k.determinism_shape = {2, 16, 1024, 128};
  k.edge_shapes = {{1, 1, 1, 2}, {1, 1, 1, 6}, {1, 3, 5, 34}, {2, 1, 7, 130}, {5, 3, 33, 18}, {1, 1, 3, 16384},
                   {1, 1, 1, 65536}, {3, 7, 11, 258}};
  k.tolerance = tight_tolerance;
  k.bytes = [](const Shape& s, DType d) { return double(2 * all(s) + 2 * table(s)) * dtype_size(d); };
  k.flops = [](const Shape& s) { return 3.0 * all(s); };
  k.grid = rowwise_grid;
  k.launch_help = kRowwiseLaunchHelp;
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_rotary;
  return k;
}

}  // namespace

const KernelSpec& rotary_embedding_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
