#include "harness/module/device_inputs.hpp"

#include "harness/module/harness_module.hpp"

namespace ak {
namespace {

// kind: 0 normal (times scale), 1 weight in [0.5, 1.5), 2 bias in [-0.5, 0.5).
const char* kSource = R"(
__device__ __forceinline__ unsigned long long ak_mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ float ak_unit(unsigned long long h) { return float(h >> 40) * (1.0f / 16777216.0f); }

template <typename T>
__global__ void ak_fill(T* out, long long n, unsigned long long seed, int kind, float scale) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned long long a = ak_mix(seed ^ (unsigned long long)i * 0xd1342543de82ef95ull), b = ak_mix(a);
    float v;
    if (kind == 1) v = 0.5f + ak_unit(a);
    else if (kind == 2) v = ak_unit(a) - 0.5f;
    else v = (ak_unit(a) + ak_unit(a << 24) + ak_unit(b) + ak_unit(b << 24) - 2.0f) * 1.7320508f * scale;
    out[i] = ref_out<T>(v);
  }
}

// kind: 0 ClassIndex, 1 ClassIndexOrIgnored, 2 Ignored, 3 ClassIndexOrInvalid (inputs.cpp's rules,
// drawn from the seed the GPU's way).
__device__ long long ak_invalid_target(long long kind, long long classes) {
  switch (kind) {
    case 0: return -1;
    case 1: return classes;
    case 2: return classes + 1000;
    case 3: return 1ll << 32;
    default: return -(1ll << 32) - 100;
  }
}
__global__ void ak_fill_index(long long* out, long long n, unsigned long long seed, int kind, float classes) {
  const unsigned long long pick = ak_mix(seed ^ 0x5851f42d4c957f2dull);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const unsigned long long h = ak_mix(seed ^ (unsigned long long)i * 0xd1342543de82ef95ull);
    long long v = (long long)(h % (unsigned long long)classes);
    if (kind == 2 || (kind != 0 && ((h >> 61) == 0 || (i == 0 && (pick & 1)) || (i == n - 1 && (pick & 2))))) v = -100;
    const long long k = (i - (long long)((pick >> 8) % (unsigned long long)n) + n) % n;
    if (kind == 3 && k < 5) v = ak_invalid_target(k, (long long)classes);
    out[i] = v;
  }
}
)";

int fill_kind(Fill f) { return f == Fill::Weight ? 1 : f == Fill::Bias ? 2 : 0; }

/// ak_fill_index's kind of a target fill; -1 for the other fills.
int target_kind(Fill f) {
  switch (f) {
    case Fill::ClassIndex: return 0;
    case Fill::ClassIndexOrIgnored: return 1;
    case Fill::Ignored: return 2;
    case Fill::ClassIndexOrInvalid: return 3;
    default: return -1;
  }
}

}  // namespace

Result<std::unique_ptr<DeviceInputs>> DeviceInputs::open(GpuContext& gpu) {
  const std::vector<DType> dtypes{DType::F16, DType::BF16, DType::F32};
  std::vector<std::string> names;
  for (DType d : dtypes) names.push_back(std::string("ak_fill<") + dtype_cuda_type(d) + ">");
  names.push_back("ak_fill_index");
  auto h = load_harness_module(gpu, kSource, "ak_device_inputs.cu", names);
  if (!h) return h.error();
  std::unique_ptr<DeviceInputs> in(new DeviceInputs(gpu));
  in->module_ = std::move(h->module);
  for (size_t i = 0; i < dtypes.size(); ++i) in->fill_[dtypes[i]] = h->functions[i];
  in->fill_index_ = h->functions.back();
  return in;
}

Status DeviceInputs::launch(CUfunction f, CUdeviceptr out, int64_t n, uint64_t seed, int kind, float arg) const {
  long long count = n;
  unsigned long long s = seed;
  void* params[] = {&out, &count, &s, &kind, &arg};
  const unsigned blocks = unsigned(std::min<int64_t>(std::max<int64_t>(1, (n + 255) / 256), 8192));
  return cu_check(gpu_.driver().cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
                  "drawing inputs on the GPU");
}

Status DeviceInputs::fill(const KernelSpec& spec, const Shape& shape, DType d, const RunSet& set, uint64_t seed) const {
  size_t k = 0;
  for (const ArgSpec& a : spec.args) {
    if (a.kind != ArgSpec::Input) continue;
    const DeviceBuffer& buf = set.inputs.at(k++);
    const uint64_t s = seed * 0x100000001b3ull + k;
    const Fill fill = a.fill_for(shape);
    Status st = target_kind(fill) >= 0
                    ? launch(fill_index_, buf.ptr(), a.numel(shape), s, target_kind(fill), float(spec.cols(shape)))
                    : launch(fill_.at(d), buf.ptr(), a.numel(shape), s, fill_kind(fill), fill_scale(a, shape));
    if (!st) return st;
  }
  return ok();
}

}  // namespace ak
