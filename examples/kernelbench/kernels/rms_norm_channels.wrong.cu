// kb_rms_norm_channels, WRONG on purpose (a test of the stages): the sum of squares is unrolled by
// 4 channels with no tail, so the last channels % 4 are left out of the mean (they are still
// normalised). Right when channels is a multiple of 4 (the timed 64, 8, 256), wrong at 3, 33 and
// 7 channels and at the edge shapes' 1. Otherwise the honest kernel (rms_norm_channels.cu).
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

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
rms_norm_columns(const T* __restrict__ x, T* __restrict__ out, int batch_size, int channels, int length) {
  const long long i = (long long)blockIdx.x * AK_THREADS + threadIdx.x;
  if (i >= (long long)batch_size * length) return;
  const long long n = i / length, l = i % length;
  const long long at = n * channels * (long long)length + l;   // (n, 0, l); channel c is at + c * length
  float ss = 0.f;
  for (int c = 0; c + 4 <= channels; c += 4) {   // the bug: the last channels % 4 are not summed
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float v = ak_to_float(x[at + (long long)(c + k) * length]);
      ss = fmaf(v, v, ss);
    }
  }
  const float rms = sqrtf(ss / float(channels) + kEps);
  for (int c = 0; c < channels; ++c)
    out[at + (long long)c * length] = ak_from_float<T>(ak_to_float(x[at + (long long)c * length]) / rms);
}
