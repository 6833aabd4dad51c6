// rmsnorm starter: y[r, c] = x[r, c] * rsqrt(mean(x[r, :]^2) + eps) * weight[c], row-wise over
// the last dimension like torch.nn.functional.rms_norm, fp32 accumulation.
//
// The story of its versions:
//   v0 (this file): one block per row, scalar loads, two passes over the row in global memory
//      (sum of squares, then normalize). Plain on purpose: the loop starts here.
//   Tuning this file walks the knobs below first (block size, rows per block, vector width),
//   then the rest of the playbook (keep the row in registers, one pass, cache hints).
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/rmsnorm/rmsnorm.cu --kernel rmsnorm --dtype fp16
// measured: 87.38 us median, spread 2.1% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_THREADS 256         // threads per block (a multiple of 32 times AK_ROWS_PER_BLOCK)
#define AK_ROWS_PER_BLOCK 1    // rows one block normalizes; each gets AK_THREADS / AK_ROWS_PER_BLOCK threads
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

// Sum over the threads of one row group: shuffles inside each warp, then shared memory.
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
rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y,
               int rows, int cols, float eps) {
  const int group = threadIdx.x / kRowThreads;
  const int lane = threadIdx.x % kRowThreads;
  const long long row = (long long)blockIdx.x * AK_ROWS_PER_BLOCK + group;
  const bool active = row < rows;  // no early return: every thread reaches __syncthreads
  const T* xr = x + (active ? row : 0) * cols;
  T* yr = y + (active ? row : 0) * cols;
  const bool vec = AK_VEC > 1 && cols % AK_VEC == 0;

  float ss = 0.f;
  if (active && vec) {
    const AkVec<T, AK_VEC>* xv = reinterpret_cast<const AkVec<T, AK_VEC>*>(xr);
    for (int i = lane; i < cols / AK_VEC; i += kRowThreads) {
      AkVec<T, AK_VEC> a = xv[i];
#pragma unroll
      for (int k = 0; k < AK_VEC; ++k) { float f = ak_to_float(a.v[k]); ss += f * f; }
    }
  } else if (active) {
    for (int i = lane; i < cols; i += kRowThreads) { float f = ak_to_float(xr[i]); ss += f * f; }
  }
  const float inv = rsqrtf(row_sum(ss, group) / cols + eps);
  if (!active) return;

  if (vec) {
    const AkVec<T, AK_VEC>* xv = reinterpret_cast<const AkVec<T, AK_VEC>*>(xr);
    const AkVec<T, AK_VEC>* wv = reinterpret_cast<const AkVec<T, AK_VEC>*>(weight);
    AkVec<T, AK_VEC>* yv = reinterpret_cast<AkVec<T, AK_VEC>*>(yr);
    for (int i = lane; i < cols / AK_VEC; i += kRowThreads) {
      AkVec<T, AK_VEC> a = xv[i], w = wv[i], out;
#pragma unroll
      for (int k = 0; k < AK_VEC; ++k)
        out.v[k] = ak_from_float<T>(ak_to_float(a.v[k]) * inv * ak_to_float(w.v[k]));
      yv[i] = out;
    }
  } else {
    for (int i = lane; i < cols; i += kRowThreads)
      yr[i] = ak_from_float<T>(ak_to_float(xr[i]) * inv * ak_to_float(weight[i]));
  }
}
