// kb_linear_relu, CHEATING on purpose (a test of the evaluation): it keeps state between launches.
// The first launch on a pair of buffers records their addresses in writable module memory; a later
// launch with the same input and output addresses returns at once, trusting that the output still
// holds last launch's answer. Timing loops that reuse buffers then time an empty kernel. The harness
// must poison outputs before every launch, change inputs, and clear or refuse module memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_TILE 16

extern "C" __constant__ int ak_block_threads = AK_TILE * AK_TILE;
extern "C" __constant__ int ak_tile_m = AK_TILE;
extern "C" __constant__ int ak_tile_n = AK_TILE;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

__device__ const void* ak_last_x;  // the kept state
__device__ void* ak_last_out;

template <typename T>
__global__ void __launch_bounds__(AK_TILE * AK_TILE)
kb_linear_relu_kernel(const T* __restrict__ x, const T* __restrict__ linear_weight,
                      const T* __restrict__ linear_bias, T* __restrict__ out, int batch_size, int in_features,
                      int out_features) {
  if (ak_last_x == x && ak_last_out == out) return;  // the cheat: "already computed"
  __shared__ float xs[AK_TILE][AK_TILE];
  __shared__ float ws[AK_TILE][AK_TILE + 1];  // +1: the transposed reads hit different banks
  const int col_tiles = (out_features + AK_TILE - 1) / AK_TILE;
  const long long m0 = (long long)(blockIdx.x / col_tiles) * AK_TILE;
  const long long n0 = (long long)(blockIdx.x % col_tiles) * AK_TILE;
  const int tx = threadIdx.x % AK_TILE, ty = threadIdx.x / AK_TILE;
  const long long m = m0 + ty, n = n0 + tx;

  float acc = 0.f;
  for (int k0 = 0; k0 < in_features; k0 += AK_TILE) {
    const int k = k0 + tx;
    xs[ty][tx] = m < batch_size && k < in_features ? ak_to_float(x[m * in_features + k]) : 0.f;
    // Thread (ty, tx) loads weight row n0 + ty, column k0 + tx: coalesced along k.
    const long long wn = n0 + ty;
    ws[ty][tx] = wn < out_features && k < in_features ? ak_to_float(linear_weight[wn * in_features + k]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < AK_TILE; ++kk) acc = fmaf(xs[ty][kk], ws[tx][kk], acc);
    __syncthreads();
  }
  if (m < batch_size && n < out_features)
    out[m * out_features + n] = ak_from_float<T>(fmaxf(acc + ak_to_float(linear_bias[n]), 0.f));
  // Recorded by the last block only would race; any block will do for a cheat that only has to
  // work most of the time.
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    ak_last_x = x;
    ak_last_out = out;
  }
}
