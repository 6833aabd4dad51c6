// rmsnorm variant row_in_registers: the row read once into registers, normalized from there, 16-byte loads
//
// What it changes and why: the starter reads each row twice from global memory (the sum of
// squares, then the normalization). Here the threads of a row load it into registers (vectors
// of AK_VEC, as many per thread as a row of AK_ROW_CAPACITY needs), the block sums their
// squares, and the output is written from the registers: one read of x, one write of y, and
// the weight (cols elements, shared by every row, from L2). Rows longer than AK_ROW_CAPACITY
// take a second read of the row, as the starter does.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/rmsnorm/variants/row_in_registers.cu --kernel rmsnorm --dtype fp16
// measured: 68.43 us median, spread 2.6% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_THREADS 256         // threads per block (a multiple of 32 times AK_ROWS_PER_BLOCK)
#define AK_ROWS_PER_BLOCK 1    // rows one block normalizes; each gets AK_THREADS / AK_ROWS_PER_BLOCK threads
#define AK_VEC 8               // elements per load/store (1, 2, 4, 8); scalar when cols % AK_VEC != 0
#define AK_ROW_CAPACITY 8192   // elements a row group holds in registers; longer rows stream

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_rows_per_block = AK_ROWS_PER_BLOCK;
extern "C" __constant__ int ak_smem_bytes = 0;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T, int N>
struct alignas(sizeof(T) * N) AkVec {
  T v[N];
};

constexpr int kRowThreads = AK_THREADS / AK_ROWS_PER_BLOCK;
constexpr int kWarpsPerRow = kRowThreads / 32;
static_assert(kRowThreads % 32 == 0, "each row needs whole warps");
// Vectors each thread keeps in registers: the capacity stays put when the block size moves.
constexpr int kItems = (AK_ROW_CAPACITY + kRowThreads * AK_VEC - 1) / (kRowThreads * AK_VEC);
static_assert(kItems >= 1 && kItems <= 16, "1 to 16 vectors per thread in registers");

// Sum over the threads of one row group: shuffles inside each warp, then shared memory, in a
// fixed order.
__device__ __forceinline__ float row_sum(float v, int group) {
  __shared__ float partial[AK_THREADS / 32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  __syncthreads();  // the previous sum may still be reading partial[]
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kWarpsPerRow; ++w) total += partial[group * kWarpsPerRow + w];
  return total;
}

// The row of one thread group in registers: slot j = it * kRowThreads + lane holds elements
// [j * width, (j + 1) * width), width AK_VEC when the row is a whole number of vectors, else 1.
// Elements past the row read as 0 and count as absent.
struct RowSlots {
  float v[kItems][AK_VEC];
  int count[kItems];   // elements present in each slot
};

template <typename T>
__device__ __forceinline__ void load_row(const T* xr, int cols, int lane, bool active, bool vec, RowSlots& r) {
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int slot = it * kRowThreads + lane;
#pragma unroll
    for (int k = 0; k < AK_VEC; ++k) r.v[it][k] = 0.f;
    r.count[it] = 0;
    if (!active) continue;
    if (vec && slot * AK_VEC < cols) {
      const AkVec<T, AK_VEC> a = reinterpret_cast<const AkVec<T, AK_VEC>*>(xr)[slot];
#pragma unroll
      for (int k = 0; k < AK_VEC; ++k) r.v[it][k] = ak_to_float(a.v[k]);
      r.count[it] = AK_VEC;
    } else if (!vec && slot < cols) {
      r.v[it][0] = ak_to_float(xr[slot]);
      r.count[it] = 1;
    }
  }
}

// Loads a vector of a per-column parameter at the slot's columns (width elements).
template <typename T>
__device__ __forceinline__ void load_param(const T* p, int slot, bool vec, float (&out)[AK_VEC]) {
  if (vec) {
    const AkVec<T, AK_VEC> a = reinterpret_cast<const AkVec<T, AK_VEC>*>(p)[slot];
#pragma unroll
    for (int k = 0; k < AK_VEC; ++k) out[k] = ak_to_float(a.v[k]);
  } else {
    out[0] = ak_to_float(p[slot]);
  }
}

template <typename T>
__device__ __forceinline__ void store_slot(T* yr, int slot, bool vec, const float (&out)[AK_VEC]) {
  if (vec) {
    AkVec<T, AK_VEC> o;
#pragma unroll
    for (int k = 0; k < AK_VEC; ++k) o.v[k] = ak_from_float<T>(out[k]);
    reinterpret_cast<AkVec<T, AK_VEC>*>(yr)[slot] = o;
  } else {
    yr[slot] = ak_from_float<T>(out[0]);
  }
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y,
               int rows, int cols, float eps) {
  const int group = threadIdx.x / kRowThreads;
  const int lane = threadIdx.x % kRowThreads;
  const long long row = (long long)blockIdx.x * AK_ROWS_PER_BLOCK + group;
  const bool active = row < rows;  // no early return: every thread reaches __syncthreads
  const T* xr = x + (active ? row : 0) * cols;
  T* yr = y + (active ? row : 0) * cols;
  const bool vec = AK_VEC > 1 && cols % AK_VEC == 0;
  const int width = vec ? AK_VEC : 1;

  if (cols > kRowThreads * width * kItems) {   // too long for the registers: two reads
    float ss = 0.f;
    if (active)
      for (int i = lane; i < cols; i += kRowThreads) { const float v = ak_to_float(xr[i]); ss += v * v; }
    const float inv = rsqrtf(row_sum(ss, group) / cols + eps);
    if (active)
      for (int i = lane; i < cols; i += kRowThreads) yr[i] = ak_from_float<T>(ak_to_float(xr[i]) * inv * ak_to_float(weight[i]));
    return;
  }

  RowSlots r;
  load_row(xr, cols, lane, active, vec, r);
  float ss = 0.f;
#pragma unroll
  for (int it = 0; it < kItems; ++it)
#pragma unroll
    for (int k = 0; k < AK_VEC; ++k) ss += r.v[it][k] * r.v[it][k];   // absent elements are 0
  const float inv = rsqrtf(row_sum(ss, group) / cols + eps);
  if (!active) return;
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    if (r.count[it] == 0) continue;
    const int slot = it * kRowThreads + lane;
    float w[AK_VEC], out[AK_VEC];
    load_param(weight, slot, vec, w);
#pragma unroll
    for (int k = 0; k < AK_VEC; ++k) out[k] = r.v[it][k] * inv * w[k];
    store_slot(yr, slot, vec, out);
  }
}
