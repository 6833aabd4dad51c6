// kb_group_norm, WRONG on purpose (a test of the stages): the apply step normalises each 4096-element
// chunk by that chunk's own mean and variance instead of its group's: the chunk summaries are
// written and never combined. Right when a group fits in one chunk (the smoke shape's 256
// elements, the edge shapes' 2 and 42), wrong as soon as a group spans several (the sweep, the
// timed shape): a chunk's mean is off its group's by about 1/64 of the spread. Otherwise the
// honest kernel (group_norm.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256
#define AK_ITEMS 16   // elements a thread: a chunk is AK_THREADS * AK_ITEMS = 4096 elements of a group

extern "C" __constant__ char ak_launch[] =
    "let group_size = channels / num_groups * height * width;"
    "let chunks = ceil_div(group_size, 4096);"
    "scratch chunk_stats float[batch_size * num_groups * chunks * 2];"
    "step group_norm_stats grid(chunks, batch_size * num_groups) block(256);"
    "step group_norm_apply grid(chunks, batch_size * num_groups) block(256);";

constexpr int kGroups = 8;       // the problem's [fixed] num_groups
constexpr float kEps = 1e-5f;    // nn.GroupNorm's default
constexpr int kChunk = AK_THREADS * AK_ITEMS;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

/// The sum over the block, in a fixed order (deterministic); every thread gets it.
__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();   // shared may still be read from the last call
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int w = 0; w < AK_THREADS / 32; ++w) s += shared[w];
  return s;
}

/// Chan et al.'s combination of two (count, mean, M2) summaries of disjoint parts.
struct Moments {
  float n, mean, m2;
};
__device__ Moments combine(Moments a, Moments b) {
  if (a.n == 0.f) return b;
  if (b.n == 0.f) return a;
  const float n = a.n + b.n, delta = b.mean - a.mean;
  return {n, a.mean + delta * (b.n / n), a.m2 + b.m2 + delta * delta * (a.n * b.n / n)};
}

/// Step 1: each block summarises one 4096-element chunk of one group: its mean and the sum of
/// squared deviations from it (two passes over registers: no cancellation of large squares).
template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
group_norm_stats(const T* __restrict__ x, const T* __restrict__ gn_weight, const T* __restrict__ gn_bias,
                 T* __restrict__ out, float* __restrict__ chunk_stats, int batch_size, int channels, int height,
                 int width) {
  __shared__ float shared[AK_THREADS / 32];
  const long long group_size = (long long)(channels / kGroups) * height * width;
  const int chunks = int((group_size + kChunk - 1) / kChunk);
  const long long start = (long long)blockIdx.x * kChunk;
  const long long count = min((long long)kChunk, group_size - start);
  const T* xg = x + (long long)blockIdx.y * group_size + start;
  float v[AK_ITEMS];
  float sum = 0.f;
#pragma unroll
  for (int r = 0; r < AK_ITEMS; ++r) {
    const int i = threadIdx.x + r * AK_THREADS;
    v[r] = i < count ? ak_to_float(xg[i]) : 0.f;
    sum += v[r];
  }
  const float mean = block_sum(sum, shared) / float(count);
  float m2 = 0.f;
#pragma unroll
  for (int r = 0; r < AK_ITEMS; ++r) {
    const float d = v[r] - mean;
    if (threadIdx.x + r * AK_THREADS < count) m2 = fmaf(d, d, m2);
  }
  m2 = block_sum(m2, shared);
  if (threadIdx.x == 0) {
    float* s = chunk_stats + ((long long)blockIdx.y * chunks + blockIdx.x) * 2;
    s[0] = mean;
    s[1] = m2;
  }
}

/// Step 2: each block combines its group's chunk summaries (each thread a strided share, then a
/// tree over the threads: a fixed order) and normalises its chunk.
template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
group_norm_apply(const T* __restrict__ x, const T* __restrict__ gn_weight, const T* __restrict__ gn_bias,
                 T* __restrict__ out, float* __restrict__ chunk_stats, int batch_size, int channels, int height,
                 int width) {
  __shared__ Moments part[AK_THREADS];
  const long long plane = (long long)height * width;
  const long long group_size = (long long)(channels / kGroups) * plane;
  const int chunks = int((group_size + kChunk - 1) / kChunk);
  const float* s = chunk_stats + (long long)blockIdx.y * chunks * 2;
  Moments m{0.f, 0.f, 0.f};
  for (int c = int(blockIdx.x) + threadIdx.x; c < min(chunks, int(blockIdx.x) + 1)  /* the bug: its own chunk's statistics alone */; c += AK_THREADS) {
    const float n = float(min((long long)kChunk, group_size - (long long)c * kChunk));
    m = combine(m, Moments{n, s[2 * c], s[2 * c + 1]});
  }
  part[threadIdx.x] = m;
  __syncthreads();
  for (int half = AK_THREADS / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) part[threadIdx.x] = combine(part[threadIdx.x], part[threadIdx.x + half]);
    __syncthreads();
  }
  const Moments g = part[0];
  const float mean = g.mean, rstd = 1.f / sqrtf(g.m2 / g.n + kEps);

  const long long start = (long long)blockIdx.x * kChunk;
  const long long count = min((long long)kChunk, group_size - start);
  const long long base = (long long)blockIdx.y * group_size + start;   // also the offset in x
  const int first_channel = (blockIdx.y % kGroups) * (channels / kGroups);
#pragma unroll 4
  for (int r = 0; r < AK_ITEMS; ++r) {
    const long long i = threadIdx.x + r * AK_THREADS;
    if (i >= count) break;
    const int c = first_channel + int((start + i) / plane);
    const float y = (ak_to_float(x[base + i]) - mean) * rstd * ak_to_float(gn_weight[c]) + ak_to_float(gn_bias[c]);
    out[base + i] = ak_from_float<T>(y);
  }
}
