// rotary_embedding variant flat_pairs: a block's threads spread over the pairs of many rows, AK_VEC pairs per thread
//
// What it changes and why: the starter gives each row (head_dim elements) its own group of
// threads; at head_dim 128 that is 64 pairs, so a group wider than 64 / AK_VEC threads idles,
// and a narrow one leaves a block with few bytes in flight. Here the AK_ROWS_PER_BLOCK rows of a
// block are one flat range of (row, vector of pairs) items that its threads walk with a stride
// of AK_THREADS: every thread has work whatever head_dim is, each item loads AK_VEC elements of
// both halves of a row (16-byte loads at AK_VEC 8 in fp16) and its cos and sin, and writes both
// halves. cos and sin are shared by every batch and head, so they come from L2.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_THREADS 256         // threads per block
#define AK_ROWS_PER_BLOCK 32   // rows one block rotates, its threads spread over all of their pairs
#define AK_VEC 8               // pairs per load/store (1, 2, 4, 8); scalar when (head_dim / 2) % AK_VEC != 0

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

template <typename T, int W>
__device__ __forceinline__ void rotate(const T* x, const T* c, const T* sn, T* y, int half, int i) {
  using V = AkVec<T, W>;
  const V a = reinterpret_cast<const V*>(x)[i], b = reinterpret_cast<const V*>(x + half)[i];
  const V cv = reinterpret_cast<const V*>(c)[i], sv = reinterpret_cast<const V*>(sn)[i];
  V lo, hi;
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const float x1 = ak_to_float(a.v[k]), x2 = ak_to_float(b.v[k]), cc = ak_to_float(cv.v[k]), ss = ak_to_float(sv.v[k]);
    lo.v[k] = ak_from_float<T>(x1 * cc - x2 * ss);
    hi.v[k] = ak_from_float<T>(x2 * cc + x1 * ss);
  }
  reinterpret_cast<V*>(y)[i] = lo;
  reinterpret_cast<V*>(y + half)[i] = hi;
}

template <typename T, int W>
__device__ __forceinline__ void rotate_rows(const T* q, const T* cos, const T* sin, T* out, long long rows, int seq,
                                            int head_dim) {
  const int half = head_dim / 2;
  const int per_row = half / W;
  const long long first = (long long)blockIdx.x * AK_ROWS_PER_BLOCK;
  for (int item = threadIdx.x; item < AK_ROWS_PER_BLOCK * per_row; item += AK_THREADS) {
    const long long row = first + item / per_row;
    if (row >= rows) break;   // items are in row order: the rest are past the end too
    const long long s = row % seq;
    rotate<T, W>(q + row * head_dim, cos + s * half, sin + s * half, out + row * head_dim, half, item % per_row);
  }
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
rotary_embedding_kernel(const T* __restrict__ q, const T* __restrict__ cos, const T* __restrict__ sin,
                        T* __restrict__ out, int batch, int heads, int seq, int head_dim) {
  const long long rows = (long long)batch * heads * seq;
  if (AK_VEC > 1 && (head_dim / 2) % AK_VEC == 0) rotate_rows<T, AK_VEC>(q, cos, sin, out, rows, seq, head_dim);
  else rotate_rows<T, 1>(q, cos, sin, out, rows, seq, head_dim);
}
