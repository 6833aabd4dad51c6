// rmsnorm variant rows_per_warp: short rows (attention's q/k norms over 64 or 128 columns) in slices of a warp, several rows per slice, no shared memory, no barrier
//
// What it changes and why: the starter and row_in_registers give each row a block or at least a
// warp, with a barrier per sum. A decoder's q/k norm runs over rows of one head (64 or 128
// columns: 128 or 256 bytes in fp16), where a warp of 16-byte loads would hold two rows and a
// block-wide sum costs more than the row's bytes. Here a row belongs to a slice of one warp:
// 32 lanes (AK_ROWS_PER_WARP 1), or 16, 8, 4 lanes when a warp takes two, four, eight rows side
// by side; and each slice takes AK_ROWS_PER_SLICE rows one after another, issuing the loads of
// all of them before it sums any, so that a lane keeps several 16-byte loads in flight even when
// a row is one load per lane. The slices of a warp take neighbouring rows at each step, so a
// warp's loads cover one contiguous stretch of memory.
//
// The sum of squares is a shuffle sum over the slice (every lane ends with the same bits);
// weight is read once per lane with the same vectors and serves every row the slice takes.
// Rows longer than the registers hold (the stages' long rows, the benchmark's 8192 columns)
// still work, not fast: the slice sums the row chunk by chunk, then reads it a second time to
// write it.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/rmsnorm/variants/rows_per_warp.cu --kernel rmsnorm --dtype fp16
// measured: 138.16 us median, spread 1.8% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_WARPS 8              // warps per block (1 to 32)
#define AK_ROWS_PER_WARP 2      // rows one warp handles side by side (1, 2, 4, 8): 32 / AK_ROWS_PER_WARP lanes per row
#define AK_ROWS_PER_SLICE 2     // rows a slice takes one after another, loads of all issued first (1, 2, 4, 8)
#define AK_LOAD_BYTES 16        // bytes per load and store (4, 8, 16); scalar when a row is not a whole number of them
#define AK_ROW_CAPACITY 128     // elements a row's lanes hold in registers; longer rows are read twice

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = AK_WARPS * 32;
extern "C" __constant__ int ak_rows_per_block = AK_WARPS * AK_ROWS_PER_WARP * AK_ROWS_PER_SLICE;
extern "C" __constant__ int ak_smem_bytes = 0;

static_assert(AK_WARPS >= 1 && AK_WARPS <= 32, "1 to 32 warps per block");
static_assert(AK_ROWS_PER_WARP == 1 || AK_ROWS_PER_WARP == 2 || AK_ROWS_PER_WARP == 4 || AK_ROWS_PER_WARP == 8,
              "a warp takes 1, 2, 4 or 8 rows side by side: slices of 32, 16, 8 or 4 lanes");
static_assert(AK_ROWS_PER_SLICE == 1 || AK_ROWS_PER_SLICE == 2 || AK_ROWS_PER_SLICE == 4 || AK_ROWS_PER_SLICE == 8,
              "a slice takes 1, 2, 4 or 8 rows in turn");
static_assert(AK_LOAD_BYTES == 4 || AK_LOAD_BYTES == 8 || AK_LOAD_BYTES == 16, "loads of 4, 8 or 16 bytes");

constexpr int kLanes = 32 / AK_ROWS_PER_WARP;                   // lanes per row
constexpr int kWarpRows = AK_ROWS_PER_WARP * AK_ROWS_PER_SLICE;   // rows one warp normalizes
static_assert(AK_ROW_CAPACITY >= kLanes, "at least one element per lane");
static_assert(AK_ROWS_PER_SLICE * (AK_ROW_CAPACITY / kLanes) <= 64,
              "at most 64 elements per lane in registers (AK_ROWS_PER_SLICE rows of AK_ROW_CAPACITY / lanes)");

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

template <typename T>
struct Layout {
  static constexpr int kVec = AK_LOAD_BYTES / (int)sizeof(T) > 0 ? AK_LOAD_BYTES / (int)sizeof(T) : 1;  // elements per load
  static constexpr int kItems = (AK_ROW_CAPACITY + kLanes * kVec - 1) / (kLanes * kVec);       // loads per lane and row
  static constexpr int kChunk = kLanes * kVec * kItems;   // elements a slice holds of one row at once
};

// The row element that register k of load it of lane l holds, in a chunk starting at base.
// Vector mode: elements base + (it * kLanes + l) * V + [0, V). Scalar mode: element
// base + (it * V + k) * kLanes + l, so that a slice's loads stay coalesced.
template <int V>
__device__ __forceinline__ int element(int base, bool vec, int l, int it, int k) {
  return vec ? base + (it * kLanes + l) * V + k : base + (it * V + k) * kLanes + l;
}

// Loads elements [base, base + kChunk) of a row of n into the lane's registers, zero past n.
template <typename T, int V, int I>
__device__ __forceinline__ void load_chunk(const T* xr, int n, int base, bool vec, int l, float (&v)[I][V]) {
#pragma unroll
  for (int it = 0; it < I; ++it) {
    if (vec) {
      const int e = element<V>(base, true, l, it, 0);
      if (e < n) {
        const AkVec<T, V> a = *reinterpret_cast<const AkVec<T, V>*>(xr + e);
#pragma unroll
        for (int k = 0; k < V; ++k) v[it][k] = ak_to_float(a.v[k]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) v[it][k] = 0.f;
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int e = element<V>(base, false, l, it, k);
        v[it][k] = e < n ? ak_to_float(xr[e]) : 0.f;
      }
    }
  }
}

// The lane's sum of squares of the registers (elements past the row were loaded as zero).
template <int V, int I>
__device__ __forceinline__ float chunk_squares(const float (&v)[I][V]) {
  float ss = 0.f;
#pragma unroll
  for (int it = 0; it < I; ++it)
#pragma unroll
    for (int k = 0; k < V; ++k) ss += v[it][k] * v[it][k];
  return ss;
}

// Sum over the lanes of one slice; every lane gets the same bits (a + b == b + a).
__device__ __forceinline__ float slice_sum(float v) {
#pragma unroll
  for (int off = kLanes / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Loads the weight for the elements load_chunk reads (zero past n): once per lane, for every row.
template <typename T, int V, int I>
__device__ __forceinline__ void load_weight(const T* __restrict__ weight, int n, int base, bool vec, int l, float (&w)[I][V]) {
  load_chunk<T, V, I>(weight, n, base, vec, l, w);
}

// Writes x * inv * weight for the elements load_chunk read the registers from.
template <typename T, int V, int I>
__device__ __forceinline__ void store_chunk(const float (&v)[I][V], const float (&w)[I][V], T* yr, int n, int base,
                                            bool vec, int l, float inv) {
#pragma unroll
  for (int it = 0; it < I; ++it) {
    if (vec) {
      const int e = element<V>(base, true, l, it, 0);
      if (e < n) {
        AkVec<T, V> out;
#pragma unroll
        for (int k = 0; k < V; ++k) out.v[k] = ak_from_float<T>(v[it][k] * inv * w[it][k]);
        *reinterpret_cast<AkVec<T, V>*>(yr + e) = out;
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int e = element<V>(base, false, l, it, k);
        if (e < n) yr[e] = ak_from_float<T>(v[it][k] * inv * w[it][k]);
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(AK_WARPS * 32)
rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y, int rows, int cols, float eps) {
  using L = Layout<T>;
  constexpr int V = L::kVec, I = L::kItems;
  const int lane = threadIdx.x & 31;
  const long long warp_row = ((long long)blockIdx.x * AK_WARPS + threadIdx.x / 32) * kWarpRows;
  if (warp_row >= rows || cols <= 0) return;   // the whole warp leaves together: no shuffle misses a lane
  const int slice = lane / kLanes, l = lane % kLanes;
  const unsigned long long misaligned =
      (reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y) |
       reinterpret_cast<unsigned long long>(weight)) % AK_LOAD_BYTES;
  const bool vec = V > 1 && cols % V == 0 && misaligned == 0;
  // Step j of the slice takes row warp_row + j * AK_ROWS_PER_WARP + slice: at each step the
  // warp's slices read neighbouring rows.
  auto row_of = [&](int j) { return warp_row + (long long)j * AK_ROWS_PER_WARP + slice; };

  if (cols <= L::kChunk) {
    float v[AK_ROWS_PER_SLICE][I][V], w[I][V];
#pragma unroll
    for (int j = 0; j < AK_ROWS_PER_SLICE; ++j) {
      const long long row = row_of(j);
      const bool active = row < rows;   // a row past the last one is empty: loaded as zeros, never written
      load_chunk<T, V, I>(x + (active ? row : 0) * cols, active ? cols : 0, 0, vec, l, v[j]);
    }
    load_weight<T, V, I>(weight, cols, 0, vec, l, w);
#pragma unroll
    for (int j = 0; j < AK_ROWS_PER_SLICE; ++j) {
      const long long row = row_of(j);
      const float inv = rsqrtf(slice_sum(chunk_squares<V, I>(v[j])) / cols + eps);
      if (row < rows) store_chunk<T, V, I>(v[j], w, y + row * cols, cols, 0, vec, l, inv);
    }
    return;
  }

  // Rows past the registers: one row at a time, summed chunk by chunk, then read again to write.
  float v[I][V], w[I][V];
  for (int j = 0; j < AK_ROWS_PER_SLICE; ++j) {
    const long long row = row_of(j);
    const bool active = row < rows;
    const int n = active ? cols : 0;
    const T* xr = x + (active ? row : 0) * cols;
    float ss = 0.f;
    for (int base = 0; base < n; base += L::kChunk) {
      load_chunk<T, V, I>(xr, n, base, vec, l, v);
      ss += chunk_squares<V, I>(v);
    }
    const float inv = rsqrtf(slice_sum(ss) / cols + eps);
    for (int base = 0; base < n; base += L::kChunk) {
      load_chunk<T, V, I>(xr, n, base, vec, l, v);
      load_weight<T, V, I>(weight, n, base, vec, l, w);
      store_chunk<T, V, I>(v, w, y + row * cols, n, base, vec, l, inv);
    }
  }
}

