// kb_29_softplus, honest: out = softplus(x) = log(1 + exp(x)), elementwise, on x [batch_size,
// dim]: the user type `autokernel kernelbench` writes for KernelBench level 1 problem 29
// (Softplus), whose timed shape is 4096 x 393216 fp32 (1.6e9 elements, 6.4 GB a tensor).
//
// As torch.nn.functional.softplus with its defaults (beta 1, threshold 20): above 20 the output is
// x itself (log1p(exp(x)) is x there to fp32's precision, and exp would overflow past 88);
// log1pf keeps the precision of 1 + exp(x) where exp(x) is tiny. Each thread handles AK_ITEMS
// elements a block-width apart (coalesced), 64-bit indices (the timed tensor passes 2^31
// elements), a bound check on every element so that any shape works.
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

__device__ __forceinline__ float softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
kb_29_softplus_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim) {
  const long long n = (long long)batch_size * dim;
  const long long base = (long long)blockIdx.x * AK_THREADS * AK_ITEMS + threadIdx.x;
  // Every load first, then every store: AK_ITEMS loads in flight per thread.
  float v[AK_ITEMS];
#pragma unroll
  for (int k = 0; k < AK_ITEMS; ++k) {
    const long long i = base + (long long)k * AK_THREADS;
    v[k] = i < n ? ak_to_float(x[i]) : 0.f;
  }
#pragma unroll
  for (int k = 0; k < AK_ITEMS; ++k) {
    const long long i = base + (long long)k * AK_THREADS;
    if (i < n) out[i] = ak_from_float<T>(softplus(v[k]));
  }
}
