#include "harness/module/device_checks.hpp"

#include "harness/module/harness_module.hpp"

namespace ak {
namespace {

// The host's rule (compare.cpp): in the output dtype, |got - e| <= max(atol + rtol |e|, ulp(e)),
// NaN only where the reference is NaN, infinities only where it is that infinity. Here the ulp
// is the step towards zero (never more than the host's step) and the bound is cut by 0.1%, so
// float arithmetic can only make the screen stricter.
const char* kSource = R"(
__device__ __forceinline__ float ak_ulp(__half v) {
  unsigned short b = __half_as_ushort(v);
  if ((b & 0x7fff) == 0) return ref_f(__ushort_as_half(1));
  return fabsf(ref_f(v) - ref_f(__ushort_as_half((unsigned short)(b - 1))));
}
__device__ __forceinline__ float ak_ulp(__nv_bfloat16 v) {
  unsigned short b = __bfloat16_as_ushort(v);
  if ((b & 0x7fff) == 0) return ref_f(__ushort_as_bfloat16(1));
  return fabsf(ref_f(v) - ref_f(__ushort_as_bfloat16((unsigned short)(b - 1))));
}
__device__ __forceinline__ float ak_ulp(float v) {
  unsigned b = __float_as_uint(v);
  if ((b & 0x7fffffffu) == 0) return __uint_as_float(1u);
  return fabsf(v - __uint_as_float(b - 1));
}

template <typename T>
__global__ void ak_screen(const T* got, const float* expected, long long n, float atol, float rtol, const int* rows,
                          long long row_length, unsigned long long* suspects) {
  unsigned long long mine = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long at = rows ? (long long)rows[i / row_length] * row_length + i % row_length : i;
    const float g = ref_f(got[at]), e32 = expected[i];
    bool bad;
    if (isnan(e32)) {
      bad = !isnan(g);
    } else {
      const T et = ref_out<T>(e32);
      const float e = ref_f(et);
      if (isinf(e)) bad = g != e;
      else if (!isfinite(g)) bad = true;
      else bad = fabsf(g - e) > 0.999f * fmaxf(atol + rtol * fabsf(e), ak_ulp(et));
    }
    mine += bad;
  }
  if (mine) atomicAdd(suspects, mine);
}

__global__ void ak_diff(const unsigned char* a, const unsigned char* b, long long bytes, unsigned long long* differ) {
  unsigned long long mine = 0;
  const long long words = bytes / 4;
  const unsigned* wa = (const unsigned*)a;
  const unsigned* wb = (const unsigned*)b;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
    mine += __popc(wa[i] ^ wb[i]) ? 1 : 0;
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (long long i = words * 4; i < bytes; ++i) mine += a[i] != b[i];
  if (mine) atomicAdd(differ, mine);
}

// A keyed fingerprint of a buffer: the wrapping sum over its words of a mix of key, position and
// word. Order-free, so any grid gives the same sum; keyed, so a kernel cannot aim at a value.
__device__ __forceinline__ unsigned long long ak_mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
__global__ void ak_fingerprint(const unsigned char* a, long long bytes, unsigned long long key, unsigned long long* sum) {
  unsigned long long mine = 0;
  const long long words = bytes / 4;
  const unsigned* w = (const unsigned*)a;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
    mine += ak_mix(key ^ ak_mix((unsigned long long)i) ^ w[i]);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (long long i = words * 4; i < bytes; ++i) mine += ak_mix(key ^ ak_mix((unsigned long long)i << 32) ^ a[i]);
  atomicAdd(sum, mine);
}

// A byte copy by a kernel: module memory between the driver's variables is mapped, but the copy
// engine refuses ranges it does not know as one allocation.
// Before a candidate's or a best's launch, in one launch: every word of the block's shared memory
// set to the poison (one block on each SM, with all the shared memory an SM gives a block,
// overwrites what any earlier kernel left on the chip), then the given slack ranges of the
// allocations poisoned byte for byte.
struct AkSlackRanges {
  unsigned long long at[AK_SLACK_RANGES];
  unsigned long long bytes[AK_SLACK_RANGES];
  int n;
};

extern "C" __global__ void ak_poison_before_launch(int shared_words, AkSlackRanges r) {
  extern __shared__ unsigned ak_shared_words[];
  for (int i = threadIdx.x; i < shared_words; i += blockDim.x) ak_shared_words[i] = 0xffffffffu;
  const unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long stride = gridDim.x * (unsigned long long)blockDim.x;
  for (int k = 0; k < r.n; ++k) {
    unsigned char* p = (unsigned char*)r.at[k];
    const unsigned long long n = r.bytes[k];
    unsigned long long head = (16 - (r.at[k] & 15)) & 15;
    if (head > n) head = n;
    if (tid < head) p[tid] = 0xff;
    const unsigned long long words = (n - head) / 16;
    uint4* q = (uint4*)(p + head);
    for (unsigned long long i = tid; i < words; i += stride) q[i] = make_uint4(~0u, ~0u, ~0u, ~0u);
    const unsigned long long tail = head + words * 16;
    if (tid < n - tail) p[tail + tid] = 0xff;
  }
}

__global__ void ak_copy(const unsigned char* from, unsigned char* to, long long bytes) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < bytes; i += (long long)gridDim.x * blockDim.x)
    to[i] = from[i];
}

// The first byte at which a and b differ, as the smallest offset any thread saw (bytes, since a
// module's memory need not be word-aligned).
__global__ void ak_first_change(const unsigned char* a, const unsigned char* b, long long bytes,
                                unsigned long long* first, unsigned long long tag) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < bytes; i += (long long)gridDim.x * blockDim.x)
    if (a[i] != b[i]) {
      atomicMin(first, tag | (unsigned long long)i);
      return;
    }
}
)";

}  // namespace

Result<std::unique_ptr<DeviceChecks>> DeviceChecks::open(GpuContext& gpu) {
  const std::vector<DType> dtypes{DType::F16, DType::BF16, DType::F32};
  std::vector<std::string> names;
  for (DType d : dtypes) names.push_back(std::string("ak_screen<") + dtype_cuda_type(d) + ">");
  names.push_back("ak_diff");
  names.push_back("ak_first_change");
  names.push_back("ak_copy");
  names.push_back("ak_fingerprint");
  names.push_back("ak_poison_before_launch");
  auto h = load_harness_module(gpu, "#define AK_SLACK_RANGES " + std::to_string(kSlackRangesPerLaunch) + "\n" + kSource,
                               "ak_device_checks.cu", names);
  if (!h) return h.error();
  std::unique_ptr<DeviceChecks> c(new DeviceChecks(gpu));
  c->module_ = std::move(h->module);
  c->names_ = h->lowered_names;
  for (size_t i = 0; i < dtypes.size(); ++i) c->screen_[dtypes[i]] = h->functions[i];
  c->diff_ = h->functions[dtypes.size()];
  c->first_change_ = h->functions[dtypes.size() + 1];
  c->copy_ = h->functions[dtypes.size() + 2];
  c->fingerprint_ = h->functions[dtypes.size() + 3];
  c->poison_ = h->functions[dtypes.size() + 4];
  if (auto s = cu_check(gpu.driver().cuFuncSetAttribute(c->poison_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                        gpu.info().shared_bytes_per_block),
                        "giving the shared-memory poison all of an SM's shared memory");
      !s)
    return s.error();
  auto counter = gpu.alloc(sizeof(uint64_t));
  if (!counter) return counter.error();
  c->counter_ = std::move(*counter);
  return c;
}

Result<uint64_t> DeviceChecks::count(CUfunction f, void** params, int64_t n) const {
  const CudaDriver& d = gpu_.driver();
  if (auto s = cu_check(d.cuMemsetD8(counter_.ptr(), 0, sizeof(uint64_t)), "clearing a check's counter"); !s) return s.error();
  const unsigned blocks = unsigned(std::min<int64_t>(std::max<int64_t>(1, (n + 255) / 256), 4096));
  if (auto s = cu_check(d.cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), "a check on the GPU"); !s)
    return s.error();
  uint64_t result = 0;
  if (auto s = gpu_.download(&result, counter_, sizeof result); !s) return s.error();
  return result;
}

Result<uint64_t> DeviceChecks::suspects(const DeviceBuffer& got, DType d, const DeviceBuffer& expected, int64_t n,
                                        Tolerance tol, const DeviceBuffer* rows, int64_t row_length) const {
  CUdeviceptr g = got.ptr(), e = expected.ptr(), r = rows ? rows->ptr() : 0, c = counter_.ptr();
  long long count_n = n, len = row_length > 0 ? row_length : 1;
  float atol = float(tol.atol), rtol = float(tol.rtol);
  void* params[] = {&g, &e, &count_n, &atol, &rtol, &r, &len, &c};
  return count(screen_.at(d), params, n);
}

Result<uint64_t> DeviceChecks::differing_bytes(const DeviceBuffer& a, const DeviceBuffer& b, size_t bytes) const {
  CUdeviceptr pa = a.ptr(), pb = b.ptr(), c = counter_.ptr();
  long long n = (long long)bytes;
  void* params[] = {&pa, &pb, &n, &c};
  return count(diff_, params, int64_t(bytes / 4 + 1));
}

}  // namespace ak

namespace ak {

Result<uint64_t> DeviceChecks::fingerprint(const DeviceBuffer& a, uint64_t key) const {
  CUdeviceptr pa = a.ptr(), c = counter_.ptr();
  long long n = (long long)a.bytes();
  unsigned long long k = key;
  void* params[] = {&pa, &n, &k, &c};
  return count(fingerprint_, params, int64_t(a.bytes() / 4 + 1));
}

Status DeviceChecks::poison_before_launch(const AllocationSlack* slack) const {
  struct Ranges {
    unsigned long long at[kSlackRangesPerLaunch];
    unsigned long long bytes[kSlackRangesPerLaunch];
    int n;
  };
  const GpuInfo& i = gpu_.info();
  const auto ranges = slack ? slack->ranges() : std::vector<std::pair<CUdeviceptr, size_t>>{};
  // The first launch poisons the shared memory too; more than kSlackRangesPerLaunch ranges take
  // further launches of the slack part alone.
  size_t next = 0;
  do {
    Ranges r{};
    for (; next < ranges.size() && r.n < int(kSlackRangesPerLaunch); ++next, ++r.n) {
      r.at[r.n] = ranges[next].first;
      r.bytes[r.n] = ranges[next].second;
    }
    int words = next <= kSlackRangesPerLaunch ? i.shared_bytes_per_block / 4 : 0;
    void* params[] = {&words, &r};
    if (auto s = cu_check(gpu_.driver().cuLaunchKernel(poison_, unsigned(i.sm_count), 1, 1, 1024, 1, 1,
                                                       unsigned(words ? i.shared_bytes_per_block : 0), nullptr, params, nullptr),
                          "poisoning every SM's shared memory and the allocations' slack");
        !s)
      return s;
  } while (next < ranges.size());
  return ok();
}

Status DeviceChecks::copy_into(CUdeviceptr from, CUdeviceptr to, size_t bytes) const {
  long long n = (long long)bytes;
  void* params[] = {&from, &to, &n};
  const unsigned blocks = unsigned(std::min<size_t>(std::max<size_t>(1, (bytes + 255) / 256), 1024));
  return cu_check(gpu_.driver().cuLaunchKernel(copy_, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
                  "copying a module's memory aside on the GPU");
}

Status DeviceChecks::first_change_into(CUdeviceptr a, CUdeviceptr b, size_t bytes, CUdeviceptr slot,
                                       uint64_t tag) const {
  long long n = (long long)bytes;
  unsigned long long t = tag;
  void* params[] = {&a, &b, &n, &slot, &t};
  const unsigned blocks = unsigned(std::min<size_t>(std::max<size_t>(1, (bytes + 255) / 256), 1024));
  return cu_check(gpu_.driver().cuLaunchKernel(first_change_, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
                  "checking a module's memory on the GPU");
}

}  // namespace ak
