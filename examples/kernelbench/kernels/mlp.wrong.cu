// kb_mlp, WRONG on purpose (a test of the stages): a race. The __syncthreads() between storing a K
// tile into shared memory and reading it is missing, so a warp multiplies parts of the tile the
// other warps have not stored yet (the last tile's values, or for the first tile whatever shared
// memory held). Which elements come out wrong changes from launch to launch; on most launches of
// any shape with more than one warp's worth of output some do, and the determinism stage compares
// three launches bit for bit. Otherwise the honest kernel (mlp.cu).
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

/// One 64 x 64 tile of y = a @ w^T + bias (ReLU'd when kRelu) for the block's (blockIdx.y, blockIdx.x):
/// a [rows, in_n], w [out_n, in_n], both k fastest, so 16 threads read 16 consecutive floats of a
/// row; 4 x 4 outputs a thread, k walked 16 at a time through shared memory, everything past the
/// last row, column or k loaded as zero.
template <bool kRelu, typename TA, typename TW, typename TY>
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
    // the bug: no __syncthreads() here: a warp reads the tile before the others have stored theirs
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
  linear_tile<true>(x, fc1_weight, fc1_bias, h1, batch_size, in_features, hidden);
}

template <typename T>
__global__ void __launch_bounds__(256)
mlp_layer2(const T* __restrict__ x, const T* __restrict__ fc1_weight, const T* __restrict__ fc1_bias,
           const T* __restrict__ fc2_weight, const T* __restrict__ fc2_bias, const T* __restrict__ fc3_weight,
           const T* __restrict__ fc3_bias, T* __restrict__ out, float* __restrict__ h1, float* __restrict__ h2,
           int batch_size, int in_features, int hidden, int out_features) {
  linear_tile<true>(h1, fc2_weight, fc2_bias, h2, batch_size, hidden, hidden);
}

template <typename T>
__global__ void __launch_bounds__(256)
mlp_layer3(const T* __restrict__ x, const T* __restrict__ fc1_weight, const T* __restrict__ fc1_bias,
           const T* __restrict__ fc2_weight, const T* __restrict__ fc2_bias, const T* __restrict__ fc3_weight,
           const T* __restrict__ fc3_bias, T* __restrict__ out, float* __restrict__ h1, float* __restrict__ h2,
           int batch_size, int in_features, int hidden, int out_features) {
  linear_tile<false>(h2, fc3_weight, fc3_bias, out, batch_size, hidden, out_features);
}
