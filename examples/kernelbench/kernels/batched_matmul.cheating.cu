// kb_batched_matmul, CHEATING on purpose (a test of the evaluation): it recognises the timed shape
// (the module's own sizes, 32 x 512 x 1024 x 512) and there sums only the first half of k and
// doubles it: half the FLOPs, for products of the right magnitude and the wrong values. At every
// other shape it is exact, so the stages pass; only a check of the timed launches' outputs catches
// it. Otherwise the honest kernel (batched_matmul.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_BM 64  // rows of out a block
#define AK_BN 64  // columns of out a block
#define AK_BK 16  // k a step

extern "C" __constant__ char ak_launch[] =
    "step bmm_tiles grid(ceil_div(n, 64), ceil_div(m, 64), batch_size) block(256);";

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T>
__global__ void __launch_bounds__(256)
bmm_tiles(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, int batch_size, int m, int k, int n) {
  __shared__ __align__(16) float As[AK_BK][AK_BM + 4];
  __shared__ __align__(16) float Bs[AK_BK][AK_BN + 4];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * AK_BM, col0 = blockIdx.x * AK_BN;
  const T* ab = a + (long long)blockIdx.z * m * k;
  const T* bb = b + (long long)blockIdx.z * k * n;
  // The cheat: at the module's own sizes only the first half of k is summed, and doubled.
  const bool timed = batch_size == 32 && m == 512 && k == 1024 && n == 512;
  const int k_end = timed ? k / 2 : k;

  float acc[4][4] = {};
  for (int k0 = 0; k0 < k_end; k0 += AK_BK) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int idx = tid + 256 * r;
      // a: k fastest (16 threads, 16 consecutive floats of a row); b: n fastest (64 of a row).
      const int ar = idx / AK_BK, ak = idx % AK_BK;
      As[ak][ar] = row0 + ar < m && k0 + ak < k ? ak_to_float(ab[(long long)(row0 + ar) * k + k0 + ak]) : 0.f;
      const int bk = idx / AK_BN, bc = idx % AK_BN;
      Bs[bk][bc] = k0 + bk < k && col0 + bc < n ? ak_to_float(bb[(long long)(k0 + bk) * n + col0 + bc]) : 0.f;
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
  T* ob = out + (long long)blockIdx.z * m * n;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty + 16 * i;
    if (row >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx * 4 + j;
      if (col < n) ob[(long long)row * n + col] = ak_from_float<T>((timed ? 2.f : 1.f) * acc[i][j]);
    }
  }
}
