// rotary_embedding: RoPE, rotate-half convention.
//   Version 2 (the newest): q and k in one launch, where the model has them (strided views of its
//   projections), with cos and sin as the model computes them ([batch or 1, seq, head_dim]).
//   Version 1: one contiguous q[B, H, S, D] with cos and sin [S, D/2]; kept so that files and run
//   folders written for it still load.
#include <tuple>
#include <utility>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rotary_embedding/rotary_layouts.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

const char* kReferenceV1 = R"(
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

KernelSpec make_v1() {
  KernelSpec k;
  k.contract_version = 1;
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
  k.reference_source = reference_prelude() + kReferenceV1;
  k.cpu_reference = cpu_rotary;
  return k;
}

// Version 2: one block of the reference per head vector of q or of k (rows: q's first, in
// batch, head, seq order), reading and writing through the strides the launch passes.
const char* kReferenceV2 = R"(
template <typename T, typename O>
__global__ void rotary_embedding_reference(const T* q, const T* k, const T* cos, const T* sin, O* q_out, O* k_out,
                                           int batch, int q_heads, int k_heads, int seq, int head_dim,
                                           int q_stride_batch, int q_stride_head, int q_stride_seq,
                                           int k_stride_batch, int k_stride_head, int k_stride_seq,
                                           int q_out_stride_batch, int q_out_stride_head, int q_out_stride_seq,
                                           int k_out_stride_batch, int k_out_stride_head, int k_out_stride_seq,
                                           int table_stride_batch, int table_stride_seq) {
  const long long q_rows = (long long)batch * q_heads * seq;
  const bool is_q = blockIdx.x < q_rows;
  const long long r = is_q ? (long long)blockIdx.x : blockIdx.x - q_rows;
  const int heads = is_q ? q_heads : k_heads;
  const long long s = r % seq, h = r / seq % heads, b = r / seq / heads;
  const T* x = is_q ? q + b * q_stride_batch + h * q_stride_head + s * q_stride_seq
                    : k + b * k_stride_batch + h * k_stride_head + s * k_stride_seq;
  O* y = is_q ? q_out + b * q_out_stride_batch + h * q_out_stride_head + s * q_out_stride_seq
              : k_out + b * k_out_stride_batch + h * k_out_stride_head + s * k_out_stride_seq;
  const long long t = b * table_stride_batch + s * table_stride_seq;
  const int half = head_dim / 2;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float x1 = ref_f(x[i]), x2 = ref_f(x[i + half]);
    y[i] = ref_out<O>(x1 * ref_f(cos[t + i]) - x2 * ref_f(sin[t + i]));
    y[i + half] = ref_out<O>(x2 * ref_f(cos[t + i + half]) + x1 * ref_f(sin[t + i + half]));
  }
}
)";

using rotary::Operand;

std::vector<std::vector<double>> cpu_rotary_v2(const Shape& shape, DType, const std::vector<std::vector<double>>& in) {
  const int64_t d = shape[rotary::kHeadDim], half = d / 2;
  const rotary::Strides t = rotary::table_strides(shape);
  std::vector<std::vector<double>> out;
  for (auto [o, from, input] : {std::tuple{Operand::QOut, Operand::Q, 0}, std::tuple{Operand::KOut, Operand::K, 1}}) {
    std::vector<double> y(size_t(rotary::numel(shape, o)));
    const rotary::Strides xs = rotary::strides(shape, from), ys = rotary::strides(shape, o);
    for (int64_t b = 0; b < shape[rotary::kBatch]; ++b)
      for (int64_t h = 0; h < rotary::heads(shape, o); ++h)
        for (int64_t s = 0; s < shape[rotary::kSeq]; ++s) {
          const double* x = in[size_t(input)].data() + b * xs.batch + h * xs.head + s * xs.seq;
          const double* c = in[2].data() + b * t.batch + s * t.seq;
          const double* sn = in[3].data() + b * t.batch + s * t.seq;
          double* r = y.data() + b * ys.batch + h * ys.head + s * ys.seq;
          for (int64_t i = 0; i < half; ++i) {
            r[i] = x[i] * c[i] - x[i + half] * sn[i];
            r[i + half] = x[i + half] * c[i + half] + x[i] * sn[i + half];
          }
        }
    out.push_back(std::move(y));
  }
  return out;
}

/// A stride argument: element strides of `o` ("batch", "head" or "seq"), from the shape's layout.
ArgSpec stride_arg(const std::string& name, Operand o, int64_t rotary::Strides::*member) {
  ArgSpec a{ArgSpec::Dim, name};
  a.computed = [o, member](const Shape& s) { return rotary::strides(s, o).*member; };
  return a;
}

KernelSpec make_rotary_v2() {
  KernelSpec k;
  k.type = "rotary_embedding";
  k.contract_version = 2;
  k.summary = "RoPE on q and k in one launch, as the model has them: out = x * cos + rotate_half(x) * sin, "
              "strided q, k, cos, sin";
  k.entry = "rotary_embedding_kernel";
  k.reference_entry = "rotary_embedding_reference";
  k.shape_names = {"batch", "q_heads", "k_heads", "seq", "head_dim", "layout"};
  auto of = [](Operand o) { return [o](const Shape& s) { return rotary::numel(s, o); }; };
  k.args = {{ArgSpec::Input, "q", of(Operand::Q), Fill::Data},
            {ArgSpec::Input, "k", of(Operand::K), Fill::Data},
            {ArgSpec::Input, "cos", rotary::table_numel, Fill::Weight},
            {ArgSpec::Input, "sin", rotary::table_numel, Fill::Bias},
            {ArgSpec::Output, "q_out", of(Operand::QOut)},
            {ArgSpec::Output, "k_out", of(Operand::KOut)},
            {ArgSpec::Dim, "batch", {}, Fill::Data, 0},
            {ArgSpec::Dim, "q_heads", {}, Fill::Data, 1},
            {ArgSpec::Dim, "k_heads", {}, Fill::Data, 2},
            {ArgSpec::Dim, "seq", {}, Fill::Data, 3},
            {ArgSpec::Dim, "head_dim", {}, Fill::Data, 4}};
  for (auto [prefix, o] : {std::pair{"q", Operand::Q}, {"k", Operand::K}, {"q_out", Operand::QOut}, {"k_out", Operand::KOut}}) {
    k.args.push_back(stride_arg(std::string(prefix) + "_stride_batch", o, &rotary::Strides::batch));
    k.args.push_back(stride_arg(std::string(prefix) + "_stride_head", o, &rotary::Strides::head));
    k.args.push_back(stride_arg(std::string(prefix) + "_stride_seq", o, &rotary::Strides::seq));
  }
  k.args.push_back(stride_arg("table_stride_batch", Operand::Table, &rotary::Strides::batch));
  k.args.push_back(stride_arg("table_stride_seq", Operand::Table, &rotary::Strides::seq));
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  // A LLaMA-3-like attention under GQA, q and k as its projections give them.
  k.bench_shape = {2, 32, 8, 2048, 128, rotary::kProjection};
  k.smoke_shape = {1, 2, 1, 8, 64, rotary::kProjection};
  k.sweep_shapes = {{1, 1, 1, 1, 64, 0},     {2, 4, 2, 16, 64, 1},     {1, 8, 8, 128, 128, 1}, {2, 2, 1, 100, 96, 2},
                    {3, 5, 5, 77, 128, 0},   {1, 32, 8, 512, 128, 1},  {4, 8, 8, 256, 64, 2},  {2, 16, 4, 1024, 128, 1},
                    {1, 1, 1, 2048, 256, 0}, {4, 32, 32, 64, 128, 2}};
  k.stability_shape = {2, 8, 2, 64, 128, rotary::kProjection};
  k.determinism_shape = {2, 16, 4, 1024, 128, rotary::kProjection};
  k.edge_shapes = {{1, 1, 1, 1, 2, 0},     {1, 1, 1, 1, 6, 1}, {1, 3, 1, 5, 34, 2},      {2, 1, 1, 7, 130, 1},
                   {5, 3, 3, 33, 18, 2},   {1, 1, 1, 3, 16384, 0}, {1, 1, 1, 1, 65536, 1}, {3, 7, 1, 11, 258, 2}};
  k.tolerance = tight_tolerance;
  k.bytes = [](const Shape& s, DType d) {
    const double moved = double(rotary::rows(s) * s[rotary::kHeadDim]);
    return (2 * moved + 2 * double(rotary::table_numel(s))) * dtype_size(d);
  };
  k.flops = [](const Shape& s) { return 3.0 * double(rotary::rows(s) * s[rotary::kHeadDim]); };
  k.grid = rotary::blocks;
  k.row_count = rotary::rows;
  k.col_count = [](const Shape& s) { return s[rotary::kHeadDim]; };
  k.shape_error = rotary::shape_error;
  k.launch_help = "extern \"C\" __constant__ int ak_rows_per_block = ...;  // grid = ceil(rows / ak_rows_per_block), "
                  "rows = batch * (q_heads + k_heads) * seq: one per head vector of q and of k";
  k.reference_source = reference_prelude() + kReferenceV2;
  k.cpu_reference = cpu_rotary_v2;
  return k;
}

}  // namespace

const KernelSpec& rotary_embedding_spec() {
  static const KernelSpec spec = make_rotary_v2();
  return spec;
}

const KernelSpec& rotary_embedding_v1_spec() {
  static const KernelSpec spec = make_v1();
  return spec;
}

}  // namespace ak
