// kb_sum_middle_dim, honest: out[b, f] = sum over r of x[b, r, f], like torch.sum(x, dim=1) on
// [batch_size, reduce_size, features].
//
// Plain on purpose: one thread per output element, walking its column down the reduced axis with
// stride `features`; neighbouring threads read neighbouring addresses, so every load is coalesced
// without shared memory. fp32 accumulation in order (deterministic), 64-bit indices.
// Grid rule `elements`: blocks = ceil(batch_size * features / ak_block_threads).
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
  for (int r = 0; r < reduce_size; ++r) sum += ak_to_float(column[(long long)r * features]);
  out[i] = ak_from_float<T>(sum);
}
