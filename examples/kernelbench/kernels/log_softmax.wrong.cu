// kb_log_softmax, WRONG on purpose (a test of the stages): log(sum(exp(x))) without subtracting
// the row's max first. Mathematically the same, and exact enough for torch.randn's inputs at every
// shape; but exp overflows to inf once a value passes about 88, so the stability stage (values
// near the dtype's max, one huge value in a row) gets -inf and NaN. Otherwise the honest kernel.
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
  const T* xr = x + row * dim;
  T* yr = out + row * dim;

  const float m = 0.f;  // the bug: no max subtracted

  float sum = 0.f;
  for (int i = threadIdx.x; i < dim; i += AK_THREADS) sum += expf(ak_to_float(xr[i]) - m);
  const float lse = m + logf(block_reduce<false>(sum));

  for (int i = threadIdx.x; i < dim; i += AK_THREADS) yr[i] = ak_from_float<T>(ak_to_float(xr[i]) - lse);
}
