// kb_mse_loss, honest: out = mean over every element of (predictions - targets)^2, like
// torch.mean((predictions - targets) ** 2) on two [batch_size, dim] tensors; out is a scalar.
//
// A loss to one number in two steps with a scratch of partial sums: mse_partial_sums has up to
// 1024 blocks stride over the elements (coalesced, each block its fixed share) and writes one
// partial sum each; mse_final, one block, adds them in a fixed order and divides by the count.
// No atomics, so the same bits every launch (the determinism stage compares them), and no
// second pass over the 2 x 64 MiB of inputs. Squares summed in double: 16M terms in fp32 would
// lose digits the 1e-4 tolerance needs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256

extern "C" __constant__ char ak_launch[] =
    "let parts = min(ceil_div(batch_size * dim, 8192), 1024);"
    "scratch partial_sums float[parts];"
    "step mse_partial_sums grid(parts) block(256);"
    "step mse_final grid(1) block(256);";

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

/// The number of partial sums, as ak_launch computes `parts` (the second step needs it too).
__device__ __forceinline__ int partial_count(long long n) { return int(min((n + 8191) / 8192, 1024LL)); }

/// The sum over the block in a fixed order; every thread gets it.
__device__ double block_sum(double v, double* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  double s = 0;
#pragma unroll
  for (int w = 0; w < AK_THREADS / 32; ++w) s += shared[w];
  return s;
}

/// Step 1: block b sums (p - t)^2 over elements b * 256 + k * parts * 256 + thread: coalesced, and
/// the same elements in the same order every launch (no atomics: deterministic).
template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
mse_partial_sums(const T* __restrict__ predictions, const T* __restrict__ targets, T* __restrict__ out,
                 float* __restrict__ partial_sums, int batch_size, int dim) {
  __shared__ double shared[AK_THREADS / 32];
  const long long n = (long long)batch_size * dim;
  double s = 0;
  for (long long i = (long long)blockIdx.x * AK_THREADS + threadIdx.x; i < n; i += (long long)gridDim.x * AK_THREADS) {
    const float d = ak_to_float(predictions[i]) - ak_to_float(targets[i]);
    s += double(d) * d;
  }
  s = block_sum(s, shared);
  if (threadIdx.x == 0) partial_sums[blockIdx.x] = float(s);
}

/// Step 2: one block adds the partial sums in a fixed order and divides by the count.
template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
mse_final(const T* __restrict__ predictions, const T* __restrict__ targets, T* __restrict__ out,
          float* __restrict__ partial_sums, int batch_size, int dim) {
  __shared__ double shared[AK_THREADS / 32];
  const long long n = (long long)batch_size * dim;
  double s = 0;
  for (int p = threadIdx.x; p < partial_count(n); p += AK_THREADS) s += partial_sums[p];
  s = block_sum(s, shared);
  if (threadIdx.x == 0) {
    out[0] = ak_from_float<T>(float(s / double(n)));
  }
}
