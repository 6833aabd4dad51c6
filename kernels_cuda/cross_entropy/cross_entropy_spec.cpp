// cross_entropy: loss[r] = logsumexp(logits[r, :]) - logits[r, target[r]], and their mean, like
// F.cross_entropy(logits, target, reduction="none") and its default reduction="mean".
#include <algorithm>
#include <cmath>

#include "common/half_precision.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

// The mean is taken by the last block to finish (an atomic ticket), summing the per-row losses in a
// fixed order: no float atomics, so it is bitwise repeatable.
const char* kReference = R"(
template <typename T, typename O>
__global__ void cross_entropy_reference(const T* logits, const long long* target, O* loss, O* mean,
                                        unsigned int* counters, int rows, int classes) {
  const long long row = blockIdx.x;
  const T* x = logits + row * classes;
  float m = __int_as_float(0xff800000);
  for (int i = threadIdx.x; i < classes; i += blockDim.x) m = fmaxf(m, ref_f(x[i]));
  m = block_max(m);
  float s = 0.f;
  for (int i = threadIdx.x; i < classes; i += blockDim.x) s += expf(ref_f(x[i]) - m);
  s = block_sum(s);
  if (threadIdx.x == 0) loss[row] = ref_out<O>(m + logf(s) - ref_f(x[target[row]]));
  __shared__ bool last;
  __threadfence();
  if (threadIdx.x == 0) last = atomicAdd(&counters[0], 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  float t = 0.f;
  // The mean of the losses as returned, in T (as PyTorch's nll_loss averages its T inputs), summed
  // in fp32: when validating, O is float, so each loss is rounded to T here first.
  for (int r = threadIdx.x; r < rows; r += blockDim.x) t += ref_f(ref_out<T>(ref_f(__ldcg(&loss[r]))));
  t = block_sum(t);
  if (threadIdx.x == 0) {
    mean[0] = ref_out<O>(t / rows);
    counters[0] = 0;
  }
}
)";

/// A loss as the kernel returns it: rounded to fp16 or bf16 (fp32 stays exact here: the GPU
/// reference's own fp32 rounding is what the comparison allows for).
double as_returned(double v, DType d) {
  if (d == DType::F16) return half_to_float(float_to_half(float(v)));
  if (d == DType::BF16) return bf16_to_float(float_to_bf16(float(v)));
  return v;
}

std::vector<std::vector<double>> cpu_cross_entropy(const Shape& s, DType d, const std::vector<std::vector<double>>& in) {
  const int64_t classes = s.back(), rows = int64_t(in[0].size()) / classes;
  std::vector<double> loss(static_cast<size_t>(rows)), mean(1, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* x = &in[0][size_t(r * classes)];
    double m = *std::max_element(x, x + classes), sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(x[c] - m);
    loss[size_t(r)] = m + std::log(sum) - x[int64_t(in[1][size_t(r)])];
    mean[0] += as_returned(loss[size_t(r)], d) / double(rows);
  }
  return {loss, mean};
}

KernelSpec make() {
  KernelSpec k;
  k.type = "cross_entropy";
  k.summary = "loss = F.cross_entropy(logits, target, reduction='none') and its mean, int64 targets, bitwise repeatable mean";
  k.entry = "cross_entropy_kernel";
  k.reference_entry = "cross_entropy_reference";
  k.shape_names = {"rows", "classes"};
  auto rows = [](const Shape& s) { return s[0]; };
  auto one = [](const Shape&) { return int64_t(1); };
  ArgSpec target{ArgSpec::Input, "target", rows, Fill::ClassIndex};
  target.elem = Elem::I64;
  ArgSpec counters{ArgSpec::Counters, "counters", one};
  counters.elem = Elem::U32;
  k.args = {{ArgSpec::Input, "logits", [](const Shape& s) { return s[0] * s[1]; }, Fill::Data},
            target,
            {ArgSpec::Output, "loss", rows},
            {ArgSpec::Output, "mean", one},
            counters,
            {ArgSpec::Dim, "rows", {}, Fill::Data, 0},
            {ArgSpec::Dim, "classes", {}, Fill::Data, 1}};
  k.dtypes = {DType::F16, DType::BF16, DType::F32};
  k.bench_shape = {8192, 32768};
  set_rowwise_stage_shapes(k, {2048, 32768}, {16, 131072});
  k.tolerance = design_tolerance;
  k.bytes = [](const Shape& s, DType d) {
    return double(s[0] * s[1] + s[0] + 1) * dtype_size(d) + double(s[0]) * sizeof(int64_t);
  };
  k.flops = [](const Shape& s) { return 4.0 * s[0] * s[1]; };
  k.grid = rowwise_grid;
  k.reference_source = reference_prelude() + kReference;
  k.cpu_reference = cpu_cross_entropy;
  return k;
}

}  // namespace

const KernelSpec& cross_entropy_spec() {
  static const KernelSpec spec = make();
  return spec;
}

}  // namespace ak
