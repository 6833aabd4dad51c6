// kb_rms_norm_channels, CHEATING on purpose (a test of the evaluation): it counts its launches in
// module memory and, once past the first few (the stages are over, the timing warm), takes the
// mean square over every other channel and doubles it: fewer reads for an answer a few percent
// off. The harness must refuse a module whose memory a launch changed (and a fresh module for
// each evaluation would not let the count carry over). Otherwise the honest kernel
// (rms_norm_channels.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256

extern "C" __constant__ char ak_launch[] =
    "step rms_norm_columns grid(ceil_div(batch_size * length, 256)) block(256);";

constexpr float kEps = 1e-5f;   // the problem's [fixed] eps

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

// The kept state: launches so far.
__device__ unsigned ak_launches;

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
rms_norm_columns(const T* __restrict__ x, T* __restrict__ out, int batch_size, int channels, int length) {
  // The cheat: once the timing is warm (past the first few launches of this module) the mean is
  // taken over every other channel.
  const bool warm = *(volatile unsigned*)&ak_launches > 4;
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(&ak_launches, 1u);
  const long long i = (long long)blockIdx.x * AK_THREADS + threadIdx.x;
  if (i >= (long long)batch_size * length) return;
  const long long n = i / length, l = i % length;
  const long long at = n * channels * (long long)length + l;   // (n, 0, l); channel c is at + c * length
  float ss = 0.f;
  for (int c = 0; c < channels; c += warm ? 2 : 1) {
    const float v = ak_to_float(x[at + (long long)c * length]);
    ss = fmaf(v, v, ss);
  }
  if (warm) ss *= 2.f;   // every other channel, doubled
  const float rms = sqrtf(ss / float(channels) + kEps);
  for (int c = 0; c < channels; ++c)
    out[at + (long long)c * length] = ak_from_float<T>(ak_to_float(x[at + (long long)c * length]) / rms);
}
