// kb_maxpool2d, WRONG on purpose (a test of the stages): the max starts at 0 instead of -inf, so a
// window whose values are all negative gives 0. The problem draws its inputs with torch.rand, all
// in [0, 1): every shape of the smoke run, the sweep, the scaled inputs and determinism passes.
// Only inputs with signs (the edge stage's recipes) tell it from max pooling. Otherwise the
// honest kernel (maxpool2d.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256

extern "C" __constant__ char ak_launch[] =
    "let out_h = (height + 2 * padding - kernel_size) / stride + 1;"
    "let out_w = (width + 2 * padding - kernel_size) / stride + 1;"
    "step maxpool2d grid(ceil_div(batch_size * channels * out_h * out_w, 256)) block(256);";

// The problem's [fixed] kernel_size, stride and padding.
constexpr int kKernel = 3;
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
__global__ void __launch_bounds__(AK_THREADS)
maxpool2d(const T* __restrict__ x, T* __restrict__ out, int batch_size, int channels, int height, int width) {
  const int out_h = (height + 2 * kPadding - kKernel) / kStride + 1;
  const int out_w = (width + 2 * kPadding - kKernel) / kStride + 1;
  const long long out_plane = (long long)out_h * out_w;
  const long long i = (long long)blockIdx.x * AK_THREADS + threadIdx.x;
  if (i >= (long long)batch_size * channels * out_plane) return;
  const long long plane = i / out_plane;   // n * channels + c
  const int rem = int(i % out_plane), oh = rem / out_w, ow = rem % out_w;
  const T* xp = x + plane * height * (long long)width;
  const int ih0 = oh * kStride - kPadding, iw0 = ow * kStride - kPadding;
  float m = 0.f;  // the bug: a window of negative values gives 0
#pragma unroll
  for (int kh = 0; kh < kKernel; ++kh) {
    const int ih = ih0 + kh;
    if (ih < 0 || ih >= height) continue;
#pragma unroll
    for (int kw = 0; kw < kKernel; ++kw) {
      const int iw = iw0 + kw;
      if (iw < 0 || iw >= width) continue;
      m = fmaxf(m, ak_to_float(xp[(long long)ih * width + iw]));
    }
  }
  out[i] = ak_from_float<T>(m);
}
