// gelu, honest: out = 0.5 x (1 + erf(x / sqrt 2)), elementwise: the kernel of the user type that
// `autokernel plan --user-types` offers for the nn.GELU() modules of examples/models/vit_mlp.py
// (entry gelu_kernel; dims batch_size, seq_len, dim; dtypes fp16 and fp32). scripts/gpu-kernelbench.sh
// serves it as a scripted LLM's first file.
//
// Plain on purpose: each thread handles AK_ITEMS elements a block-width apart (coalesced), fp32
// math whatever T is, 64-bit indices, a bound check on every element so that any shape works.
// Grid rule `elements`: blocks = ceil(batch_size * seq_len * dim / (ak_block_threads * ak_items_per_thread)).
#include <cuda_fp16.h>

#define AK_THREADS 256
#define AK_ITEMS 4

extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_items_per_thread = AK_ITEMS;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
gelu_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int seq_len, int dim) {
  const long long n = (long long)batch_size * seq_len * dim;
  const long long base = (long long)blockIdx.x * AK_THREADS * AK_ITEMS + threadIdx.x;
#pragma unroll
  for (int j = 0; j < AK_ITEMS; ++j) {
    const long long i = base + (long long)j * AK_THREADS;
    if (i < n) {
      const float v = ak_to_float(x[i]);
      out[i] = ak_from_float<T>(0.5f * v * (1.f + erff(v * 0.70710678118654752f)));
    }
  }
}
