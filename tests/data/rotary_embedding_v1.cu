// rotary_embedding starter: RoPE with the rotate-half convention on q[batch, heads, seq, head_dim],
// with cos and sin of shape [seq, head_dim / 2]: for d < D/2, with s the position of the row,
//   out[d]       = q[d] * cos[s, d] - q[d + D/2] * sin[s, d]
//   out[d + D/2] = q[d + D/2] * cos[s, d] + q[d] * sin[s, d]
// like the LLaMA / GPT-NeoX `q * cos + rotate_half(q) * sin`, in fp32.
//
// The story of its versions:
//   v0 (this file): one block per row of head_dim elements, one thread per pair, scalar loads.
//   Plain on purpose: with head_dim 128 half the threads of a block idle. Tuning walks the knobs
//   below first (threads, rows per block, vector width).
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_THREADS 128         // threads per block
#define AK_ROWS_PER_BLOCK 1    // rows one block rotates; each gets AK_THREADS / AK_ROWS_PER_BLOCK threads
#define AK_VEC 1               // pairs per load/store (1, 2, 4, 8); scalar when (head_dim / 2) % AK_VEC != 0

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

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
rotary_embedding_kernel(const T* __restrict__ q, const T* __restrict__ cos, const T* __restrict__ sin,
                        T* __restrict__ out, int batch, int heads, int seq, int head_dim) {
  const long long rows = (long long)batch * heads * seq;
  const long long row = (long long)blockIdx.x * AK_ROWS_PER_BLOCK + threadIdx.x / kRowThreads;
  const int lane = threadIdx.x % kRowThreads;
  if (row >= rows) return;  // no block-wide synchronization in this kernel
  const int half = head_dim / 2;
  const long long s = row % seq;
  const T* x = q + row * head_dim;
  T* y = out + row * head_dim;
  const T* c = cos + s * half;
  const T* sn = sin + s * half;
  if (AK_VEC > 1 && half % AK_VEC == 0) {
    using V = AkVec<T, AK_VEC>;
    for (int i = lane; i < half / AK_VEC; i += kRowThreads) {
      V a = reinterpret_cast<const V*>(x)[i], b = reinterpret_cast<const V*>(x + half)[i];
      V cv = reinterpret_cast<const V*>(c)[i], sv = reinterpret_cast<const V*>(sn)[i], lo, hi;
#pragma unroll
      for (int k = 0; k < AK_VEC; ++k) {
        float x1 = ak_to_float(a.v[k]), x2 = ak_to_float(b.v[k]), cc = ak_to_float(cv.v[k]), ss = ak_to_float(sv.v[k]);
        lo.v[k] = ak_from_float<T>(x1 * cc - x2 * ss);
        hi.v[k] = ak_from_float<T>(x2 * cc + x1 * ss);
      }
      reinterpret_cast<V*>(y)[i] = lo;
      reinterpret_cast<V*>(y + half)[i] = hi;
    }
  } else {
    for (int i = lane; i < half; i += kRowThreads) {
      float x1 = ak_to_float(x[i]), x2 = ak_to_float(x[i + half]), cc = ak_to_float(c[i]), ss = ak_to_float(sn[i]);
      y[i] = ak_from_float<T>(x1 * cc - x2 * ss);
      y[i + half] = ak_from_float<T>(x2 * cc + x1 * ss);
    }
  }
}
