// kb_39_l2norm, honest: out[r, :] = x[r, :] / sqrt(sum over j of x[r, j]^2), like
// x / torch.norm(x, p=2, dim=1, keepdim=True) on x [batch_size, dim]: the user type
// `autokernel kernelbench` writes for KernelBench level 1 problem 39 (L2Norm_), whose timed shape
// is 32768 x 65535 fp32 (2.1e9 elements, 8.6 GB a tensor).
//
// One block per row, two passes over the row in global memory: the sum of squares in fp32 (each
// thread's strided partial, then a fixed-order tree over the block, so repeated runs are bitwise
// equal), then every element divided by the norm. A division as the module does, not a multiply
// by a reciprocal: a row of zeros gives 0 / 0 = NaN where the module gives NaN. 64-bit row
// offsets: rows * dim passes 2^31 at the timed shape. Any AK_THREADS from 1 to 1024 is correct.
// Grid rule `rows`: blocks = ceil(batch_size / ak_rows_per_block), one row per block.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 512

extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_rows_per_block = 1;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

// The sum of v over the block, returned to every thread. Warps reduce with shuffles when the
// block is whole warps; otherwise (under 32 threads, or not a multiple of 32) shared memory alone.
__device__ __forceinline__ float block_sum(float v) {
  constexpr int kWarps = (AK_THREADS + 31) / 32;
  __shared__ float partial[AK_THREADS % 32 == 0 ? kWarps : AK_THREADS];
  __shared__ float total;
#if AK_THREADS % 32 == 0
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = partial[0];
    for (int w = 1; w < kWarps; ++w) r += partial[w];
    total = r;
  }
#else
  partial[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = partial[0];
    for (int t = 1; t < AK_THREADS; ++t) r += partial[t];
    total = r;
  }
#endif
  __syncthreads();
  return total;
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
kb_39_l2norm_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim) {
  const long long row = blockIdx.x;
  if (row >= batch_size) return;  // the whole block leaves together
  const T* xr = x + row * dim;
  T* yr = out + row * dim;

  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += AK_THREADS) {
    const float v = ak_to_float(xr[i]);
    ss = fmaf(v, v, ss);
  }
  const float norm = sqrtf(block_sum(ss));
  for (int i = threadIdx.x; i < dim; i += AK_THREADS) yr[i] = ak_from_float<T>(ak_to_float(xr[i]) / norm);
}
