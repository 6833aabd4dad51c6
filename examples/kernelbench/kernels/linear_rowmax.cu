// kb_linear_rowmax, honest: out[r, 0] = the largest over f of x[r, :] . W[f, :] + b[f], like
// torch.max(nn.Linear(in_features, out_features)(x), dim=1, keepdim=True)[0] on x
// [batch_size, in_features], weight [out_features, in_features], bias [out_features].
//
// The GEMM's output is never written: linear_tile_max computes a 64 x 64 tile of x @ W^T in
// registers (a shared-memory tiled SIMT GEMM, 4 x 4 outputs a thread, K walked 16 at a time,
// rows, columns and the K tail past the last loaded as zero), adds the bias and reduces each row
// of the tile to its largest value (half-warp shuffles), one float a row and tile into scratch;
// row_max takes each row's largest over its tiles. Scratch is batch_size x out_features / 64
// floats instead of the 16 MiB of y. NaN wins a max, as in torch.max. fp32 FMA, no TF32.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_BM 64  // rows of x a block
#define AK_BN 64  // output features a block
#define AK_BK 16  // in_features a step

extern "C" __constant__ char ak_launch[] =
    "let col_tiles = ceil_div(out_features, 64);"
    "scratch tile_max float[batch_size * col_tiles];"
    "step linear_tile_max grid(col_tiles, ceil_div(batch_size, 64)) block(256);"
    "step row_max grid(ceil_div(batch_size, 256)) block(256);";

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

/// torch.max's order: NaN above everything.
__device__ __forceinline__ float max_nan(float a, float b) { return (b > a || b != b) ? b : a; }

/// Step 1: a 64 x 64 tile of y = x @ W^T + b in registers, reduced at once to each row's largest
/// value within the tile: y itself is never written.
template <typename T>
__global__ void __launch_bounds__(256)
linear_tile_max(const T* __restrict__ x, const T* __restrict__ linear_weight, const T* __restrict__ linear_bias,
                T* __restrict__ out, float* __restrict__ tile_max, int batch_size, int in_features, int out_features) {
  __shared__ __align__(16) float As[AK_BK][AK_BM + 4];
  __shared__ __align__(16) float Bs[AK_BK][AK_BN + 4];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * AK_BM, col0 = blockIdx.x * AK_BN;
  const int col_tiles = (out_features + AK_BN - 1) / AK_BN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < in_features; k0 += AK_BK) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      // Both operands k fastest: 16 threads read 16 consecutive floats of a row of x or of W.
      const int idx = tid + 256 * r, rr = idx / AK_BK, kk = idx % AK_BK;
      As[kk][rr] = row0 + rr < batch_size && k0 + kk < in_features
                       ? ak_to_float(x[(long long)(row0 + rr) * in_features + k0 + kk]) : 0.f;
      Bs[kk][rr] = col0 + rr < out_features && k0 + kk < in_features
                       ? ak_to_float(linear_weight[(long long)(col0 + rr) * in_features + k0 + kk]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < AK_BK; ++kk) {
      const float4 bv = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float av = As[kk][ty + 16 * i];
        acc[i][0] = fmaf(av, bv.x, acc[i][0]);
        acc[i][1] = fmaf(av, bv.y, acc[i][1]);
        acc[i][2] = fmaf(av, bv.z, acc[i][2]);
        acc[i][3] = fmaf(av, bv.w, acc[i][3]);
      }
    }
    __syncthreads();
  }
  // Row ty + 16 i is held by the 16 threads of a half-warp (tx = 0..15): a shuffle reduction.
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float m = __int_as_float(0xff800000);   // -inf: a column past the last counts for nothing
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx * 4 + j;
      if (col < out_features) m = max_nan(m, acc[i][j] + ak_to_float(linear_bias[col]));
    }
    for (int o = 8; o > 0; o >>= 1) m = max_nan(m, __shfl_xor_sync(0xffffffffu, m, o));
    const int row = row0 + ty + 16 * i;
    if (tx == 0 && row < batch_size) tile_max[(long long)row * col_tiles + blockIdx.x] = m;
  }
}

/// Step 2: each row's largest over its column tiles.
template <typename T>
__global__ void __launch_bounds__(256)
row_max(const T* __restrict__ x, const T* __restrict__ linear_weight, const T* __restrict__ linear_bias,
        T* __restrict__ out, float* __restrict__ tile_max, int batch_size, int in_features, int out_features) {
  const int row = blockIdx.x * 256 + threadIdx.x;
  if (row >= batch_size) return;
  const int col_tiles = (out_features + AK_BN - 1) / AK_BN;
  const float* t = tile_max + (long long)row * col_tiles;
  float m = t[0];
  for (int c = 1; c < col_tiles; ++c) m = max_nan(m, t[c]);
  out[row] = ak_from_float<T>(m);
}
