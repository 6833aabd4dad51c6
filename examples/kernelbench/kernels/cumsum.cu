// kb_cumsum, honest: out[b, i] = x[b, 0] + ... + x[b, i], like torch.cumsum(x, dim=1) on
// [batch_size, length].
//
// A two-pass scan with a scratch of chunk sums, so that a long row is scanned by many blocks at
// once (128 rows alone would fill a few SMs of 132): scan_chunk_sums writes the sum of each
// 2048-element chunk of each row; scan_chunks adds the sums of the chunks before its own (its
// carry) to the chunk's own scan (8 consecutive elements a thread, a warp scan of thread totals
// with shuffles, a scan of the 8 warp totals). x is read twice (the second time mostly from L2),
// out written once. Sums in double (the chunk sums kept as doubles in an int64 scratch), rounded
// once per output: deterministic, and closer to the exact sum than fp32 can hold, so the result
// does not depend on the order of the adds, as PyTorch's own order is not ours.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256
#define AK_ITEMS 8   // consecutive elements a thread: a chunk is 2048 elements of a row

extern "C" __constant__ char ak_launch[] =
    "let chunks = ceil_div(length, 2048);"
    "scratch chunk_sums int64[batch_size * chunks];"
    "step scan_chunk_sums grid(chunks, batch_size) block(256);"
    "step scan_chunks grid(chunks, batch_size) block(256);";

constexpr int kChunk = AK_THREADS * AK_ITEMS;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

/// The sum over the block in a fixed order; every thread gets it. `shared` holds a double a warp.
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

/// Step 1: the sum of each 2048-element chunk of each row, a double kept bit for bit in an int64
/// scratch (the plan's scratch types are float, T, int and int64).
template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
scan_chunk_sums(const T* __restrict__ x, T* __restrict__ out, long long* __restrict__ chunk_sums, int batch_size,
                int length) {
  __shared__ double shared[AK_THREADS / 32];
  const int chunks = (length + kChunk - 1) / kChunk;
  const long long start = (long long)blockIdx.x * kChunk;
  const T* xr = x + (long long)blockIdx.y * length;
  double s = 0;
  for (long long i = start + threadIdx.x; i < min(start + kChunk, (long long)length); i += AK_THREADS) s += ak_to_float(xr[i]);
  s = block_sum(s, shared);
  if (threadIdx.x == 0) chunk_sums[(long long)blockIdx.y * chunks + blockIdx.x] = __double_as_longlong(s);  // kept exact
}

/// Step 2: each chunk's carry (the sum of the chunks before it in its row), then the chunk's own
/// scan: each thread's 8 elements in order, a warp scan of the thread totals, a scan of the warp
/// totals. Accumulated in double, rounded once per output: the order of the adds then moves the
/// result by less than fp32's half unit, whatever order PyTorch's own scan takes.
template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
scan_chunks(const T* __restrict__ x, T* __restrict__ out, long long* __restrict__ chunk_sums, int batch_size,
            int length) {
  __shared__ double shared[AK_THREADS / 32];
  __shared__ double warp_totals[AK_THREADS / 32];
  const int chunks = (length + kChunk - 1) / kChunk;
  const long long start = (long long)blockIdx.x * kChunk;
  const T* xr = x + (long long)blockIdx.y * length;
  T* yr = out + (long long)blockIdx.y * length;

  double carry = 0;
  for (int c = threadIdx.x; c < int(blockIdx.x); c += AK_THREADS) carry += __longlong_as_double(chunk_sums[(long long)blockIdx.y * chunks + c]);
  carry = block_sum(carry, shared);

  const long long first = start + (long long)threadIdx.x * AK_ITEMS;
  double v[AK_ITEMS];
  double run = 0;
#pragma unroll
  for (int k = 0; k < AK_ITEMS; ++k) {
    run += first + k < length ? double(ak_to_float(xr[first + k])) : 0.0;
    v[k] = run;
  }
  // Inclusive scan of the thread totals across the warp.
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  double inclusive = run;
  for (int o = 1; o < 32; o <<= 1) {
    const double up = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o) inclusive += up;
  }
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  double before = carry + inclusive - run;   // everything before this thread's first element
  for (int w = 0; w < warp; ++w) before += warp_totals[w];
#pragma unroll
  for (int k = 0; k < AK_ITEMS; ++k)
    if (first + k < length) yr[first + k] = ak_from_float<T>(float(before + v[k]));
}
