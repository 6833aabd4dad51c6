// cross_entropy: loss[r] = logsumexp(logits[r, :]) - logits[r, target[r]], and their mean, like
// F.cross_entropy(logits, target, reduction="none") and its default reduction="mean".
//   Version 2 (the newest): a target of -100 (PyTorch's default ignore_index) ignores its row: its
//   loss is 0 and the mean is over the rows not ignored (all ignored: NaN, PyTorch's 0/0); any
//   other target outside [0, classes) gives that row a NaN loss, so a NaN mean.
//   Version 1: every target in [0, classes), the mean over all rows; kept so that files and run
//   folders written for it still load.
#include <algorithm>
#include <cmath>

#include "common/half_precision.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

// The mean is taken by the last block to finish (an atomic ticket), summing the per-row losses in a
// fixed order: no float atomics, so it is bitwise repeatable.
const char* kReferenceV1 = R"(
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

// Version 2: an ignored row's loss is 0, an invalid target's NaN (its logit never read); the last
// block counts the rows not ignored, in int.
const char* kReferenceV2 = R"(
template <typename T, typename O>
__global__ void cross_entropy_reference(const T* logits, const long long* target, O* loss, O* mean,
                                        unsigned int* counters, int rows, int classes) {
  const long long row = blockIdx.x;
  const long long tr = target[row];
  const T* x = logits + row * classes;
  float m = __int_as_float(0xff800000);
  for (int i = threadIdx.x; i < classes; i += blockDim.x) m = fmaxf(m, ref_f(x[i]));
  m = block_max(m);
  float s = 0.f;
  for (int i = threadIdx.x; i < classes; i += blockDim.x) s += expf(ref_f(x[i]) - m);
  s = block_sum(s);
  if (threadIdx.x == 0)
    loss[row] = ref_out<O>(tr == -100 ? 0.f : (tr < 0 || tr >= classes) ? __int_as_float(0x7fffffff) : m + logf(s) - ref_f(x[tr]));
  __shared__ bool last;
  __threadfence();
  if (threadIdx.x == 0) last = atomicAdd(&counters[0], 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  float t = 0.f;
  int kept = 0;
  for (int r = threadIdx.x; r < rows; r += blockDim.x) {
    t += ref_f(ref_out<T>(ref_f(__ldcg(&loss[r]))));
    kept += target[r] != -100;
  }
  t = block_sum(t);
  kept = block_sum(kept);
  if (threadIdx.x == 0) {
    mean[0] = ref_out<O>(t / float(kept));  // no row kept: 0 / 0, NaN
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

std::vector<std::vector<double>> cpu_cross_entropy_v2(const Shape& s, DType d, const std::vector<std::vector<double>>& in) {
  const int64_t classes = s.back(), rows = int64_t(in[0].size()) / classes;
  std::vector<double> loss(static_cast<size_t>(rows));
  double sum_kept = 0;
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double target = in[1][size_t(r)];
    if (target == double(kIgnoredTarget)) continue;  // loss 0, not counted
    ++kept;
    if (target < 0 || target >= double(classes)) {
      loss[size_t(r)] = std::nan("");
    } else {
      const double* x = &in[0][size_t(r * classes)];
      double m = *std::max_element(x, x + classes), e = 0;
      for (int64_t c = 0; c < classes; ++c) e += std::exp(x[c] - m);
      loss[size_t(r)] = m + std::log(e) - x[int64_t(target)];
    }
    sum_kept += as_returned(loss[size_t(r)], d);
  }
  // No row kept: 0 / 0, NaN, as PyTorch's mean over no rows.
  return {loss, {kept ? sum_kept / double(kept) : std::nan("")}};
}

/// Edge shapes of version 2 beyond the row-wise ones: every row ignored, and five invalid targets
/// (functions, not globals: a spec may be built while other files' statics are initialised).
Shape every_row_ignored() { return {6, 100}; }
Shape five_invalid_targets() { return {9, 50}; }

KernelSpec make(int version) {
  KernelSpec k;
  k.type = "cross_entropy";
  k.contract_version = version;
  k.summary = version == 1 ? "loss = F.cross_entropy(logits, target, reduction='none') and its mean, int64 targets, bitwise repeatable mean"
                           : "loss = F.cross_entropy(logits, target, reduction='none') and its mean, int64 targets, -100 ignores a row "
                             "(loss 0, left out of the mean), any other target outside [0, classes) gives NaN, bitwise repeatable mean";
  k.entry = "cross_entropy_kernel";
  k.reference_entry = "cross_entropy_reference";
  k.shape_names = {"rows", "classes"};
  auto rows = [](const Shape& s) { return s[0]; };
  auto one = [](const Shape&) { return int64_t(1); };
  ArgSpec target{ArgSpec::Input, "target", rows, version == 1 ? Fill::ClassIndex : Fill::ClassIndexOrIgnored};
  target.elem = Elem::I64;
  if (version >= 2)
    target.fill_of_shape = [](const Shape& s) {
      return s == every_row_ignored() ? Fill::Ignored : s == five_invalid_targets() ? Fill::ClassIndexOrInvalid : Fill::ClassIndexOrIgnored;
    };
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
  if (version >= 2) k.edge_shapes.insert(k.edge_shapes.end(), {every_row_ignored(), five_invalid_targets()});
  k.tolerance = design_tolerance;
  // Version 2's minimum: the logits of the rows not ignored, 7 in 8 of them as the harness draws
  // targets (a kernel that skips the ignored rows moves no more).
  const double logits_read = version == 1 ? 1.0 : 7.0 / 8.0;
  k.bytes = [logits_read](const Shape& s, DType d) {
    return (logits_read * double(s[0] * s[1]) + double(s[0] + 1)) * dtype_size(d) + double(s[0]) * sizeof(int64_t);
  };
  k.flops = [](const Shape& s) { return 4.0 * s[0] * s[1]; };
  k.grid = rowwise_grid;
  k.reference_source = reference_prelude() + (version == 1 ? kReferenceV1 : kReferenceV2);
  k.cpu_reference = version == 1 ? cpu_cross_entropy : cpu_cross_entropy_v2;
  return k;
}

}  // namespace

const KernelSpec& cross_entropy_spec() {
  static const KernelSpec spec = make(2);
  return spec;
}

const KernelSpec& cross_entropy_v1_spec() {
  static const KernelSpec spec = make(1);
  return spec;
}

}  // namespace ak
