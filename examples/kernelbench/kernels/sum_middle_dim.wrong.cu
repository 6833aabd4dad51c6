// kb_sum_middle_dim, WRONG on purpose (a test of the stages): the reduced axis is walked four rows
// at a time and the last reduce_size % 4 rows are forgotten. Right whenever reduce_size is a multiple
// of 4 (the timed 512 and the powers of two), wrong on odd ones (33, 7, 1531) and zero when
// reduce_size < 4. Otherwise the honest kernel (sum_middle_dim.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256

extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_items_per_thread = 1;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
kb_sum_middle_dim_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int reduce_size,
                         int features) {
  const long long i = (long long)blockIdx.x * AK_THREADS + threadIdx.x;
  if (i >= (long long)batch_size * features) return;
  const long long b = i / features, f = i % features;
  const T* column = x + b * reduce_size * features + f;
  float sum = 0.f;
  for (int r = 0; r + 3 < reduce_size; r += 4)  // the bug: no loop for the remainder
    sum += ak_to_float(column[(long long)r * features]) + ak_to_float(column[(long long)(r + 1) * features]) +
           ak_to_float(column[(long long)(r + 2) * features]) + ak_to_float(column[(long long)(r + 3) * features]);
  out[i] = ak_from_float<T>(sum);
}
