// kb_63_gemm_relu_divide, honest: out = relu(x @ W^T + b) / 2.0, like nn.Linear, then torch.relu
// and `/ divisor` (2.0). The user type `autokernel kernelbench` writes for KernelBench level 2
// problem 63 (Gemm_ReLU_Divide): x [batch_size, in_features], the layer's weight [out_features,
// in_features] (each output the dot product of two K-contiguous rows), timed at 1024 x 8192 by
// 8192 x 8192 fp32.
//
// The GEMM of the level-2 problem 86's file beside this one (a plain tiled SIMT GEMM, its micro
// tiles, knobs and grid rule, fp32 FMA in a fixed order with no TF32), with this module's epilogue
// in fp32, step by step.
// Grid rule `tiles`: blocks = ceil(batch_size / ak_tile_m) * ceil(out_features / ak_tile_n);
// the block's tile is blockIdx.x as (row tile, column tile), column tiles fastest.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_TILE 128
#define AK_MICRO 8
#define AK_BK 16

constexpr int kMicro = AK_TILE / AK_MICRO > 32 ? AK_TILE / 32 : (AK_MICRO < AK_TILE ? AK_MICRO : AK_TILE);
constexpr int kSide = AK_TILE / kMicro;  // threads along each side of the tile
constexpr int kThreads = kSide * kSide;
static_assert(AK_TILE % kMicro == 0, "AK_TILE must be a multiple of the micro tile");

extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = AK_TILE;
extern "C" __constant__ int ak_tile_n = AK_TILE;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

// The module's steps after the GEMM: the layer's bias, ReLU, `/ divisor`.
__device__ __forceinline__ float epilogue(float dot, float bias) {
  const float divisor = 2.0f;
  return fmaxf(dot + bias, 0.f) / divisor;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
kb_63_gemm_relu_divide_kernel(
    const T* __restrict__ x, const T* __restrict__ linear_weight,
    const T* __restrict__ linear_bias, T* __restrict__ out, int batch_size,
    int in_features, int out_features) {
  __shared__ float xs[AK_BK][AK_TILE + 1];  // +1: the k-major stores of one warp spread over banks
  __shared__ float ws[AK_BK][AK_TILE + 1];
  const int col_tiles = (out_features + AK_TILE - 1) / AK_TILE;
  const long long m0 = (long long)(blockIdx.x / col_tiles) * AK_TILE;
  const long long n0 = (long long)(blockIdx.x % col_tiles) * AK_TILE;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;

  float acc[kMicro][kMicro];
#pragma unroll
  for (int i = 0; i < kMicro; ++i)
#pragma unroll
    for (int j = 0; j < kMicro; ++j) acc[i][j] = 0.f;

  for (long long k0 = 0; k0 < in_features; k0 += AK_BK) {
    // Consecutive threads read consecutive k of one row: AK_BK floats of a row in one go.
    for (int idx = threadIdx.x; idx < AK_TILE * AK_BK; idx += kThreads) {
      const int r = idx / AK_BK, kk = idx % AK_BK;
      const long long k = k0 + kk, m = m0 + r, n = n0 + r;
      xs[kk][r] = m < batch_size && k < in_features ? ak_to_float(x[m * in_features + k]) : 0.f;
      ws[kk][r] = n < out_features && k < in_features ? ak_to_float(linear_weight[n * in_features + k]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < AK_BK; ++kk) {
      float a[kMicro], b[kMicro];
#pragma unroll
      for (int i = 0; i < kMicro; ++i) a[i] = xs[kk][ty + i * kSide];
#pragma unroll
      for (int j = 0; j < kMicro; ++j) b[j] = ws[kk][tx + j * kSide];
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the next stage overwrites what this one read
  }

#pragma unroll
  for (int i = 0; i < kMicro; ++i) {
    const long long m = m0 + ty + i * kSide;
#pragma unroll
    for (int j = 0; j < kMicro; ++j) {
      const long long n = n0 + tx + j * kSide;
      if (m < batch_size && n < out_features) out[m * out_features + n] = ak_from_float<T>(epilogue(acc[i][j], ak_to_float(linear_bias[n])));
    }
  }
}
