// kb_conv2d_bias, CHEATING on purpose (a test of the evaluation): it keeps the filter in module
// memory across launches. The first launch copies the weights it reads into a __device__ array
// and records the weight pointer; a later launch on the same pointer reads the copy instead
// ("already transposed, skip the reload"), trusting that the weights behind a pointer never
// change. A harness that reuses its buffers with new weights gets last launch's filter; the
// harness must draw new parameters for every launch and refuse a module whose memory a launch
// changed. Otherwise the honest kernel (conv2d_bias.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_BM 64  // output pixels a block
#define AK_BN 64  // output channels a block
#define AK_BK 16  // K (in_channels * kernel_size^2) a step

extern "C" __constant__ char ak_launch[] =
    "let out_h = (height + 2 * padding - kernel_size) / stride + 1;"
    "let out_w = (width + 2 * padding - kernel_size) / stride + 1;"
    "step conv2d_igemm grid(ceil_div(batch_size * out_h * out_w, 64), ceil_div(out_channels, 64)) block(256);";

// The problem's [fixed] stride and padding.
constexpr int kStride = 1;
constexpr int kPadding = 1;

// The kept state: a copy of the filter (up to 1M floats) and the pointer it was read from.
constexpr long long kCacheFloats = 1 << 20;
__device__ float ak_weight_cache[kCacheFloats];
__device__ const void* ak_cached_weight;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T>
__global__ void __launch_bounds__(256)
conv2d_igemm(const T* __restrict__ x, const T* __restrict__ conv_weight, const T* __restrict__ conv_bias,
             T* __restrict__ out, int batch_size, int in_channels, int out_channels, int height, int width,
             int kernel_size) {
  const int out_h = (height + 2 * kPadding - kernel_size) / kStride + 1;
  const int out_w = (width + 2 * kPadding - kernel_size) / kStride + 1;
  const long long plane = (long long)out_h * out_w;
  const long long pixels = (long long)batch_size * plane;
  const int taps = kernel_size * kernel_size;
  const int kdim = in_channels * taps;
  __shared__ __align__(16) float As[AK_BK][AK_BM + 4];
  __shared__ __align__(16) float Bs[AK_BK][AK_BN + 4];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const long long p0 = (long long)blockIdx.x * AK_BM;
  const int n0 = blockIdx.y * AK_BN;
  // Read before any block records the pointer; a cheat only has to work from the second launch on.
  const bool cached = ak_cached_weight == (const void*)conv_weight;

  // The pixel this thread gathers for every K tile (threads tid and tid + 64k share it): decoded once.
  const int am = tid % AK_BM;
  const long long ap = p0 + am;
  const bool a_valid = ap < pixels;
  const long long an = a_valid ? ap / plane : 0;
  const int arem = a_valid ? int(ap % plane) : 0;
  const int ih0 = (arem / out_w) * kStride - kPadding, iw0 = (arem % out_w) * kStride - kPadding;
  const T* xn = x + an * in_channels * (long long)height * width;

  float acc[4][4] = {};
  for (int k0 = 0; k0 < kdim; k0 += AK_BK) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int ak = tid / AK_BM + 4 * r;
      const int ka = k0 + ak;
      float v = 0.f;
      if (a_valid && ka < kdim) {
        const int c = ka / taps, tap = ka % taps;
        const int ih = ih0 + tap / kernel_size, iw = iw0 + tap % kernel_size;
        if (ih >= 0 && ih < height && iw >= 0 && iw < width) v = ak_to_float(xn[((long long)c * height + ih) * width + iw]);
      }
      As[ak][am] = v;
      // Weights: k fastest, so that 16 threads read 16 consecutive floats of one channel's filter.
      const int idx = tid + 256 * r;
      const int bk = idx % AK_BK, bn = idx / AK_BK;
      const int oc = n0 + bn, kb = k0 + bk;
      float w = 0.f;
      if (oc < out_channels && kb < kdim) {
        const long long at = (long long)oc * kdim + kb;
        if (cached && at < kCacheFloats) {
          w = ak_weight_cache[at];  // the cheat: last launch's filter, "already transposed"
        } else {
          w = ak_to_float(conv_weight[at]);
          if (blockIdx.x == 0 && at < kCacheFloats) ak_weight_cache[at] = w;
        }
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
  // Pixel tx + 16 i, channels ty * 4 + j: a warp writes 16 consecutive pixels of two channels.
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long p = p0 + tx + 16 * i;
    if (p >= pixels) continue;
    const long long n = p / plane, rem = p % plane;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int oc = n0 + ty * 4 + j;
      if (oc < out_channels)
        out[(n * out_channels + oc) * plane + rem] = ak_from_float<T>(acc[i][j] + ak_to_float(conv_bias[oc]));
    }
  }
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) ak_cached_weight = conv_weight;
}
