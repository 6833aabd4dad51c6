// kb_linear_relu, WRONG on purpose (a test of the stages): K is walked in whole tiles of 16 only,
// so the last in_features % 16 products are left out of every sum. Right when in_features is a
// multiple of 16 (the timed 2048, the powers of two), wrong on odd widths (1531, 7, 33). Otherwise
// the honest kernel (linear_relu.cu).
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

template <typename T>
__global__ void __launch_bounds__(AK_TILE * AK_TILE)
kb_linear_relu_kernel(const T* __restrict__ x, const T* __restrict__ linear_weight,
                      const T* __restrict__ linear_bias, T* __restrict__ out, int batch_size, int in_features,
                      int out_features) {
  __shared__ float xs[AK_TILE][AK_TILE];
  __shared__ float ws[AK_TILE][AK_TILE + 1];  // +1: the transposed reads hit different banks
  const int col_tiles = (out_features + AK_TILE - 1) / AK_TILE;
  const long long m0 = (long long)(blockIdx.x / col_tiles) * AK_TILE;
  const long long n0 = (long long)(blockIdx.x % col_tiles) * AK_TILE;
  const int tx = threadIdx.x % AK_TILE, ty = threadIdx.x / AK_TILE;
  const long long m = m0 + ty, n = n0 + tx;

  float acc = 0.f;
  for (int k0 = 0; k0 + AK_TILE <= in_features; k0 += AK_TILE) {  // the bug: the K tail is dropped
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
}
