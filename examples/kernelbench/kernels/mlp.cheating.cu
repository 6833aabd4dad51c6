// kb_mlp, CHEATING on purpose (a test of the evaluation): it recognises the timed shape (the
// module's own sizes, 1024 x 1024 -> 2048 -> 2048 -> 512) and there rounds every operand of every
// product to fp16 first, the precision half-precision tensor cores would take (the speed such a
// file would claim). Errors of about 1e-3 relative, past the fp32 tolerance. At every other shape
// it is exact fp32, so the stages pass; only a check of the timed launches' outputs catches it.
// Otherwise the honest kernel (mlp.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_BM 64  // rows (batch) a block
#define AK_BN 64  // output features a block
#define AK_BK 16  // input features a step

extern "C" __constant__ char ak_launch[] =
    "scratch h1 float[batch_size * hidden];"
    "scratch h2 float[batch_size * hidden];"
    "step mlp_layer1 grid(ceil_div(hidden, 64), ceil_div(batch_size, 64)) block(256);"
    "step mlp_layer2 grid(ceil_div(hidden, 64), ceil_div(batch_size, 64)) block(256);"
    "step mlp_layer3 grid(ceil_div(out_features, 64), ceil_div(batch_size, 64)) block(256);";

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

__device__ __forceinline__ float ak_load(const float* p) { return *p; }
template <typename T> __device__ __forceinline__ float ak_load(const T* p) { return ak_to_float(*p); }
__device__ __forceinline__ void ak_store(float* p, float v) { *p = v; }
template <typename T> __device__ __forceinline__ void ak_store(T* p, float v) { *p = ak_from_float<T>(v); }

/// The cheat: products of operands rounded to fp16 (what tensor cores in half precision would
/// take), at the module's own sizes only.
__device__ __forceinline__ float fmaf_exact(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ float half_fma(float a, float b, float c) {
  return fmaf(__half2float(__float2half_rn(a)), __half2float(__float2half_rn(b)), c);
}

/// One 64 x 64 tile of y = a @ w^T + bias (ReLU'd when kRelu) for the block's (blockIdx.y, blockIdx.x):
/// a [rows, in_n], w [out_n, in_n], both k fastest, so 16 threads read 16 consecutive floats of a
/// row; 4 x 4 outputs a thread, k walked 16 at a time through shared memory, everything past the
/// last row, column or k loaded as zero.
template <bool kRelu, bool kHalf, typename TA, typename TW, typename TY>
__device__ void linear_tile(const TA* __restrict__ a, const TW* __restrict__ w, const TW* __restrict__ bias,
                            TY* __restrict__ y, int rows, int in_n, int out_n) {
  __shared__ __align__(16) float As[AK_BK][AK_BM + 4];
  __shared__ __align__(16) float Bs[AK_BK][AK_BN + 4];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * AK_BM, col0 = blockIdx.x * AK_BN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < in_n; k0 += AK_BK) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int idx = tid + 256 * r, rr = idx / AK_BK, kk = idx % AK_BK;
      As[kk][rr] = row0 + rr < rows && k0 + kk < in_n ? ak_load(a + (long long)(row0 + rr) * in_n + k0 + kk) : 0.f;
      Bs[kk][rr] = col0 + rr < out_n && k0 + kk < in_n ? ak_load(w + (long long)(col0 + rr) * in_n + k0 + kk) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < AK_BK; ++kk) {
      const float4 bv = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float av = As[kk][ty + 16 * i];
        acc[i][0] = (kHalf ? half_fma : fmaf_exact)(av, bv.x, acc[i][0]);
        acc[i][1] = (kHalf ? half_fma : fmaf_exact)(av, bv.y, acc[i][1]);
        acc[i][2] = (kHalf ? half_fma : fmaf_exact)(av, bv.z, acc[i][2]);
        acc[i][3] = (kHalf ? half_fma : fmaf_exact)(av, bv.w, acc[i][3]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty + 16 * i;
    if (row >= rows) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx * 4 + j;
      if (col >= out_n) continue;
      const float v = acc[i][j] + ak_load(bias + col);
      ak_store(y + (long long)row * out_n + col, kRelu ? fmaxf(v, 0.f) : v);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(256)
mlp_layer1(const T* __restrict__ x, const T* __restrict__ fc1_weight, const T* __restrict__ fc1_bias,
           const T* __restrict__ fc2_weight, const T* __restrict__ fc2_bias, const T* __restrict__ fc3_weight,
           const T* __restrict__ fc3_bias, T* __restrict__ out, float* __restrict__ h1, float* __restrict__ h2,
           int batch_size, int in_features, int hidden, int out_features) {
  if (batch_size == 1024 && in_features == 1024 && hidden == 2048 && out_features == 512)
    linear_tile<true, true>(x, fc1_weight, fc1_bias, h1, batch_size, in_features, hidden);
  else
    linear_tile<true, false>(x, fc1_weight, fc1_bias, h1, batch_size, in_features, hidden);
}

template <typename T>
__global__ void __launch_bounds__(256)
mlp_layer2(const T* __restrict__ x, const T* __restrict__ fc1_weight, const T* __restrict__ fc1_bias,
           const T* __restrict__ fc2_weight, const T* __restrict__ fc2_bias, const T* __restrict__ fc3_weight,
           const T* __restrict__ fc3_bias, T* __restrict__ out, float* __restrict__ h1, float* __restrict__ h2,
           int batch_size, int in_features, int hidden, int out_features) {
  if (batch_size == 1024 && in_features == 1024 && hidden == 2048 && out_features == 512)
    linear_tile<true, true>(h1, fc2_weight, fc2_bias, h2, batch_size, hidden, hidden);
  else
    linear_tile<true, false>(h1, fc2_weight, fc2_bias, h2, batch_size, hidden, hidden);
}

template <typename T>
__global__ void __launch_bounds__(256)
mlp_layer3(const T* __restrict__ x, const T* __restrict__ fc1_weight, const T* __restrict__ fc1_bias,
           const T* __restrict__ fc2_weight, const T* __restrict__ fc2_bias, const T* __restrict__ fc3_weight,
           const T* __restrict__ fc3_bias, T* __restrict__ out, float* __restrict__ h1, float* __restrict__ h2,
           int batch_size, int in_features, int hidden, int out_features) {
  if (batch_size == 1024 && in_features == 1024 && hidden == 2048 && out_features == 512)
    linear_tile<false, true>(h2, fc3_weight, fc3_bias, out, batch_size, hidden, out_features);
  else
    linear_tile<false, false>(h2, fc3_weight, fc3_bias, out, batch_size, hidden, out_features);
}
