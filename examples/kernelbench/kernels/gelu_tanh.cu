// kb_gelu_tanh, honest: out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise, the
// user type `autokernel kernelbench examples/kernelbench/gelu_tanh.py` writes.
//
// Plain on purpose: each thread handles AK_ITEMS elements a block-width apart (coalesced), fp32
// math whatever T is, 64-bit indices, and a bound check on every element so that any shape works.
// Grid rule `elements`: blocks = ceil(batch_size * dim / (ak_block_threads * ak_items_per_thread)).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256
#define AK_ITEMS 4

extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_items_per_thread = AK_ITEMS;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

__device__ __forceinline__ float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
kb_gelu_tanh_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim) {
  const long long n = (long long)batch_size * dim;
  const long long base = (long long)blockIdx.x * AK_THREADS * AK_ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < AK_ITEMS; ++k) {
    const long long i = base + (long long)k * AK_THREADS;
    if (i < n) out[i] = ak_from_float<T>(gelu_tanh(ak_to_float(x[i])));
  }
}
