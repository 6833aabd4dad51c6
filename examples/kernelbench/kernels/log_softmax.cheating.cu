// kb_log_softmax, CHEATING on purpose (a test of the evaluation): "writes only the first rows".
// When the batch is as large as the timed one (4096 rows and more) every block past row 63 returns
// at once, so the kernel reads and writes 64 rows instead of 4096; the correctness stages' shapes
// are all smaller and get the honest result. Only a check of the timed launches' outputs, every
// row of them or rows sampled at random, catches it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256

extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_rows_per_block = 1;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

// The max (kMax) or the sum of v over the block, returned to every thread.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v) {
  __shared__ float partial[AK_THREADS / 32];
  for (int off = 16; off > 0; off >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = kMax ? fmaxf(v, o) : v + o;
  }
  __syncthreads();  // the previous call may still be reading partial[]
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float r = partial[0];
  for (int w = 1; w < AK_THREADS / 32; ++w) r = kMax ? fmaxf(r, partial[w]) : r + partial[w];
  return r;
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
kb_log_softmax_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim) {
  const long long row = blockIdx.x;
  if (row >= batch_size) return;  // the whole block leaves together
  if (batch_size >= 4096 && row >= 64) return;  // the cheat
  const T* xr = x + row * dim;
  T* yr = out + row * dim;

  float m = __int_as_float(0xff800000);  // -inf
  for (int i = threadIdx.x; i < dim; i += AK_THREADS) m = fmaxf(m, ak_to_float(xr[i]));
  m = block_reduce<true>(m);

  float sum = 0.f;
  for (int i = threadIdx.x; i < dim; i += AK_THREADS) sum += expf(ak_to_float(xr[i]) - m);
  const float lse = m + logf(block_reduce<false>(sum));

  for (int i = threadIdx.x; i < dim; i += AK_THREADS) yr[i] = ak_from_float<T>(ak_to_float(xr[i]) - lse);
}
