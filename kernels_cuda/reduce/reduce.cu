// reduce starter: y[r] = sum(x[r, :]), the sum over the last dimension like torch.sum(x, dim=-1),
// fp32 accumulation, one value per row.
//
// The story of its versions:
//   v0 (this file): one block per row, scalar loads, a shared-memory sum across warps. Plain on
//   purpose: the loop starts here. The order of the sum is fixed, so results are bitwise
//   repeatable (no atomics).
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/reduce/reduce.cu --kernel reduce --dtype fp16
// measured: 42.59 us median, spread 3.5% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_THREADS 256         // threads per block (a multiple of 32 times AK_ROWS_PER_BLOCK)
#define AK_ROWS_PER_BLOCK 1    // rows one block sums; each gets AK_THREADS / AK_ROWS_PER_BLOCK threads
#define AK_VEC 1               // elements per load/store (1, 2, 4, 8); scalar when cols % AK_VEC != 0

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_rows_per_block = AK_ROWS_PER_BLOCK;
extern "C" __constant__ int ak_smem_bytes = 0;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T, int N>
struct alignas(sizeof(T) * N) AkVec {
  T v[N];
};

constexpr int kRowThreads = AK_THREADS / AK_ROWS_PER_BLOCK;
constexpr int kWarpsPerRow = kRowThreads / 32;
static_assert(kRowThreads % 32 == 0, "each row needs whole warps");

// Sum over the threads of one row group: shuffles inside each warp, then shared memory, in a
// fixed order.
__device__ __forceinline__ float row_sum(float v, int group) {
  __shared__ float partial[AK_THREADS / 32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x / 32;
  if ((threadIdx.x & 31) == 0) partial[warp] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kWarpsPerRow; ++w) total += partial[group * kWarpsPerRow + w];
  return total;
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
reduce_kernel(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
  const int group = threadIdx.x / kRowThreads;
  const int lane = threadIdx.x % kRowThreads;
  const long long row = (long long)blockIdx.x * AK_ROWS_PER_BLOCK + group;
  const bool active = row < rows;  // no early return: every thread reaches __syncthreads
  const T* xr = x + (active ? row : 0) * cols;
  const bool vec = AK_VEC > 1 && cols % AK_VEC == 0;

  float s = 0.f;
  if (active && vec) {
    const AkVec<T, AK_VEC>* xv = reinterpret_cast<const AkVec<T, AK_VEC>*>(xr);
    for (int i = lane; i < cols / AK_VEC; i += kRowThreads) {
      AkVec<T, AK_VEC> a = xv[i];
#pragma unroll
      for (int k = 0; k < AK_VEC; ++k) s += ak_to_float(a.v[k]);
    }
  } else if (active) {
    for (int i = lane; i < cols; i += kRowThreads) s += ak_to_float(xr[i]);
  }
  const float total = row_sum(s, group);
  if (active && lane == 0) y[row] = ak_from_float<T>(total);
}
