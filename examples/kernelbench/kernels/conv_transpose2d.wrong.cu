// kb_conv_transpose2d, WRONG on purpose (a test of the stages): it writes the output channels in
// whole groups of 16 only, so the last out_channels % 16 channels are never written (they keep
// the harness's poison). Right when out_channels is a multiple of 16 (the timed 32, and 64), wrong
// at 17, 5 and 1. Otherwise the honest kernel (conv_transpose2d.cu): an implicit GEMM per parity
// class of the output pixels.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_BM 64  // pixels of one parity class a block
#define AK_BN 64  // output channels a block
#define AK_BK 16  // K (in_channels * 4 taps) a step

extern "C" __constant__ char ak_launch[] =
    "step conv_transpose_igemm grid(ceil_div(batch_size * height * width, 64), ceil_div(out_channels, 64), 4) block(256);";

// The problem's [fixed] kernel_size, stride and padding.
constexpr int kKernel = 4;
constexpr int kStride = 2;
constexpr int kPadding = 1;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T>
__global__ void __launch_bounds__(256)
conv_transpose_igemm(const T* __restrict__ x, const T* __restrict__ conv_transpose_weight, T* __restrict__ out,
                     int batch_size, int in_channels, int out_channels, int height, int width) {
  static_assert(kKernel == 4 && kStride == 2 && kPadding == 1, "the parity classes assume kernel 4, stride 2, padding 1");
  const int qh = blockIdx.z / 2, qw = blockIdx.z % 2;  // this block's parity class
  const long long plane = (long long)height * width;   // the pixels of one class in one image
  const long long pixels = (long long)batch_size * plane;
  const int out_w = 2 * width;
  const long long out_plane = 4 * plane;
  const int kdim = in_channels * 4;
  __shared__ __align__(16) float As[AK_BK][AK_BM + 4];
  __shared__ __align__(16) float Bs[AK_BK][AK_BN + 4];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const long long p0 = (long long)blockIdx.x * AK_BM;
  const int n0 = blockIdx.y * AK_BN;

  const int am = tid % AK_BM;
  const long long ap = p0 + am;
  const bool a_valid = ap < pixels;
  const long long an = a_valid ? ap / plane : 0;
  const int arem = a_valid ? int(ap % plane) : 0;
  const int ai = arem / width, aj = arem % width;
  const T* xn = x + an * in_channels * plane;

  float acc[4][4] = {};
  for (int k0 = 0; k0 < kdim; k0 += AK_BK) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int ak = tid / AK_BM + 4 * r;
      const int ka = k0 + ak;
      float v = 0.f;
      if (a_valid && ka < kdim) {
        const int ic = ka / 4, a = (ka / 2) % 2, b = ka % 2;
        const int ih = ai + qh - a, iw = aj + qw - b;
        if (ih >= 0 && ih < height && iw >= 0 && iw < width) v = ak_to_float(xn[(ic * (long long)height + ih) * width + iw]);
      }
      As[ak][am] = v;
      const int idx = tid + 256 * r;
      const int bk = idx % AK_BK, bn = idx / AK_BK;
      const int oc = n0 + bn, kb = k0 + bk;
      float w = 0.f;
      if (oc < out_channels && kb < kdim) {
        const int ic = kb / 4, kh = 1 - qh + 2 * ((kb / 2) % 2), kw = 1 - qw + 2 * (kb % 2);
        w = ak_to_float(conv_transpose_weight[(((long long)ic * out_channels + oc) * 4 + kh) * 4 + kw]);
      }
      Bs[bk][bn] = w;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < AK_BK; ++kk) {
      const float4 b = *reinterpret_cast<const float4*>(&Bs[kk][ty * 4]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float a = As[kk][tx + 16 * i];
        acc[i][0] = fmaf(a, b.x, acc[i][0]);
        acc[i][1] = fmaf(a, b.y, acc[i][1]);
        acc[i][2] = fmaf(a, b.z, acc[i][2]);
        acc[i][3] = fmaf(a, b.w, acc[i][3]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long p = p0 + tx + 16 * i;
    if (p >= pixels) continue;
    const long long n = p / plane;
    const int rem = int(p % plane);
    const long long at = (long long)(2 * (rem / width) + qh) * out_w + 2 * (rem % width) + qw;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int oc = n0 + ty * 4 + j;
      if (oc < out_channels / 16 * 16) {
        out[(n * out_channels + oc) * out_plane + at] = ak_from_float<T>(acc[i][j]);
      }
    }
  }
}
