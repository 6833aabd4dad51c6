// softmax variant rows_per_warp: one warp (or a slice of one) per row, shuffles only, no shared memory, no barrier
//
// What it changes and why: attention's softmax runs over short rows (BERT: 98304 rows of 512),
// where a block of 256 threads per row leaves most threads idle and pays a block barrier per
// reduction for a few hundred elements. Here a row belongs to a slice of one warp: 32 lanes
// (AK_ROWS_PER_WARP 1), or 16, 8, 4 lanes when a warp takes two, four, eight rows side by side.
// A block is AK_WARPS such warps and handles AK_WARPS * AK_ROWS_PER_WARP rows; nothing is shared
// between warps, so there is no shared memory and no __syncthreads, and a warp past the last row
// leaves at once.
//
// Each lane issues every load of its share of the row (AK_LOAD_BYTES wide: 16-byte vectors when
// the row is a whole number of them) before it uses any, keeps the elements in registers, and
// takes its own max m and sum s of exp(x - m). The slice then combines the lanes' pairs in one
// go: a shuffle max, one exponential per lane to rescale its s to that max, a shuffle sum. That
// is one exponential per lane for the combine, not one per shuffle step (which is what made an
// earlier single (max, sum) reduction slower than two). The outputs are the lane's exponentials
// times exp(m - max) / sum, written from the registers: one read, one write.
//
// Rows longer than AK_ROW_CAPACITY (the stages' 4097, 65536, 262144 columns) still work, not
// fast: the slice walks the row in chunks of the capacity, keeps a running (m, s) per lane,
// rescaled once per chunk, then reads the row a second time to write it.
//
// Exponentials: ex2.approx on (x - m) * log2(e), what __expf does; the difference is taken
// before the scale because folding log2(e) into one fma with x loses the low bits of x*log2(e)
// for large inputs (near fp16's maximum that is 0.3% of the result, past every tolerance here).
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/softmax/variants/rows_per_warp.cu --kernel softmax --dtype fp16
// measured: 125.50 us median, spread 2.0% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_WARPS 8              // warps per block (1 to 32)
#define AK_ROWS_PER_WARP 1      // rows one warp handles side by side (1, 2, 4, 8): 32 / AK_ROWS_PER_WARP lanes per row
#define AK_LOAD_BYTES 16        // bytes per load and store (4, 8, 16); scalar when a row is not a whole number of them
#define AK_ROW_CAPACITY 512     // elements a row's lanes hold in registers; longer rows are read twice

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = AK_WARPS * 32;
extern "C" __constant__ int ak_rows_per_block = AK_WARPS * AK_ROWS_PER_WARP;
extern "C" __constant__ int ak_smem_bytes = 0;

static_assert(AK_WARPS >= 1 && AK_WARPS <= 32, "1 to 32 warps per block");
static_assert(AK_ROWS_PER_WARP == 1 || AK_ROWS_PER_WARP == 2 || AK_ROWS_PER_WARP == 4 || AK_ROWS_PER_WARP == 8,
              "a warp takes 1, 2, 4 or 8 rows: slices of 32, 16, 8 or 4 lanes");
static_assert(AK_LOAD_BYTES == 4 || AK_LOAD_BYTES == 8 || AK_LOAD_BYTES == 16, "loads of 4, 8 or 16 bytes");

constexpr int kLanes = 32 / AK_ROWS_PER_WARP;   // lanes per row
static_assert(AK_ROW_CAPACITY >= kLanes, "at least one element per lane");
static_assert(AK_ROW_CAPACITY / kLanes <= 64, "at most 64 elements per lane in registers");

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

// Two floats into two elements at once (one pack instruction for the 16-bit types); the same
// correctly rounded bits as converting each alone.
template <typename T> __device__ __forceinline__ void ak_pack2(T* out, float a, float b) {
  out[0] = ak_from_float<T>(a);
  out[1] = ak_from_float<T>(b);
}
template <> __device__ __forceinline__ void ak_pack2<__half>(__half* out, float a, float b) {
  *reinterpret_cast<__half2*>(out) = __floats2half2_rn(a, b);
}
template <> __device__ __forceinline__ void ak_pack2<__nv_bfloat16>(__nv_bfloat16* out, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(a, b);
}

constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float ak_neg_inf() { return __int_as_float(0xff800000); }  // NVRTC has no INFINITY
// exp(d) for d <= 0: one ex2.approx (relative error about 2^-22), -inf gives 0.
__device__ __forceinline__ float ak_exp(float d) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d * kLog2e));
  return r;
}
// s measured against max m, rescaled to a max mt >= m; both -inf (nothing seen) keeps s = 0.
__device__ __forceinline__ float ak_rescale(float s, float m, float mt) { return m == mt ? s : s * ak_exp(m - mt); }

template <typename T>
struct Layout {
  static constexpr int kVec = AK_LOAD_BYTES / (int)sizeof(T) > 0 ? AK_LOAD_BYTES / (int)sizeof(T) : 1;  // elements per load
  static constexpr int kItems = (AK_ROW_CAPACITY + kLanes * kVec - 1) / (kLanes * kVec);       // loads per lane
  static constexpr int kChunk = kLanes * kVec * kItems;   // elements a slice holds at once
};

// Loads elements [base, base + kChunk) of a row of n into the lane's registers, -inf past n.
// Vector mode: load it of lane l holds elements base + (it * kLanes + l) * kVec + [0, kVec).
// Scalar mode: element base + (it * kVec + k) * kLanes + l, so that a warp's loads stay coalesced.
template <typename T, int V, int I>
__device__ __forceinline__ void load_chunk(const T* xr, int n, int base, bool vec, int l, float (&v)[I][V]) {
#pragma unroll
  for (int it = 0; it < I; ++it) {
    if (vec) {
      const int e = base + (it * kLanes + l) * V;
      if (e < n) {
        const AkVec<T, V> a = *reinterpret_cast<const AkVec<T, V>*>(xr + e);
#pragma unroll
        for (int k = 0; k < V; ++k) v[it][k] = ak_to_float(a.v[k]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) v[it][k] = ak_neg_inf();
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int e = base + (it * V + k) * kLanes + l;
        v[it][k] = e < n ? ak_to_float(xr[e]) : ak_neg_inf();
      }
    }
  }
}

// Writes v * scale to the elements load_chunk read the registers from.
template <typename T, int V, int I>
__device__ __forceinline__ void store_chunk(T* yr, int n, int base, bool vec, int l, const float (&v)[I][V], float scale) {
#pragma unroll
  for (int it = 0; it < I; ++it) {
    if (vec) {
      const int e = base + (it * kLanes + l) * V;
      if (e < n) {
        AkVec<T, V> out;
        if constexpr (V % 2 == 0) {
#pragma unroll
          for (int k = 0; k < V; k += 2) ak_pack2<T>(&out.v[k], v[it][k] * scale, v[it][k + 1] * scale);
        } else {
#pragma unroll
          for (int k = 0; k < V; ++k) out.v[k] = ak_from_float<T>(v[it][k] * scale);
        }
        *reinterpret_cast<AkVec<T, V>*>(yr + e) = out;
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int e = base + (it * V + k) * kLanes + l;
        if (e < n) yr[e] = ak_from_float<T>(v[it][k] * scale);
      }
    }
  }
}

// The slice's max of the lanes' m, and its sum of their s rescaled to that max: shuffles only,
// one exponential per lane.
__device__ __forceinline__ void slice_combine(float m, float s, float& mt, float& st) {
  mt = m;
#pragma unroll
  for (int off = kLanes / 2; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
  st = ak_rescale(s, m, mt);
#pragma unroll
  for (int off = kLanes / 2; off > 0; off >>= 1) st += __shfl_xor_sync(0xffffffffu, st, off);
}

template <typename T>
__global__ void __launch_bounds__(AK_WARPS * 32)
softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
  using L = Layout<T>;
  constexpr int V = L::kVec, I = L::kItems;
  const int lane = threadIdx.x & 31;
  const long long warp_row = ((long long)blockIdx.x * AK_WARPS + threadIdx.x / 32) * AK_ROWS_PER_WARP;
  if (warp_row >= rows) return;   // the whole warp leaves together: no shuffle misses a lane
  const long long row = warp_row + lane / kLanes;
  const bool active = row < rows;
  const int l = lane % kLanes;
  const int n = active ? cols : 0;   // a slice past the last row sees an empty row: it loads and writes nothing
  const T* xr = x + (active ? row : 0) * cols;
  T* yr = y + (active ? row : 0) * cols;
  const bool vec = V > 1 && cols % V == 0 && reinterpret_cast<unsigned long long>(x) % AK_LOAD_BYTES == 0 &&
                   reinterpret_cast<unsigned long long>(y) % AK_LOAD_BYTES == 0;
  float v[I][V];

  if (cols <= L::kChunk) {
    load_chunk<T, V, I>(xr, n, 0, vec, l, v);
    float m = ak_neg_inf();
#pragma unroll
    for (int it = 0; it < I; ++it)
#pragma unroll
      for (int k = 0; k < V; ++k) m = fmaxf(m, v[it][k]);
    const float ms = m == ak_neg_inf() ? 0.f : m;   // a lane holding only padding: exp(-inf) = 0, never NaN
    float s = 0.f;
#pragma unroll
    for (int it = 0; it < I; ++it)
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[it][k] = ak_exp(v[it][k] - ms);
        s += v[it][k];
      }
    float mt, st;
    slice_combine(m, s, mt, st);
    store_chunk<T, V, I>(yr, n, 0, vec, l, v, ak_rescale(1.f, m, mt) / st);
    return;
  }

  // Rows past the registers: a running (m, s) per lane over chunks, then a second read to write.
  float m = ak_neg_inf(), s = 0.f;
  for (int base = 0; base < n; base += L::kChunk) {
    load_chunk<T, V, I>(xr, n, base, vec, l, v);
    float mc = m;
#pragma unroll
    for (int it = 0; it < I; ++it)
#pragma unroll
      for (int k = 0; k < V; ++k) mc = fmaxf(mc, v[it][k]);
    s = ak_rescale(s, m, mc);
    m = mc;
    const float ms = m == ak_neg_inf() ? 0.f : m;
#pragma unroll
    for (int it = 0; it < I; ++it)
#pragma unroll
      for (int k = 0; k < V; ++k) s += ak_exp(v[it][k] - ms);
  }
  float mt, st;
  slice_combine(m, s, mt, st);
  const float inv = 1.f / st;
  for (int base = 0; base < n; base += L::kChunk) {
    load_chunk<T, V, I>(xr, n, base, vec, l, v);
#pragma unroll
    for (int it = 0; it < I; ++it)
#pragma unroll
      for (int k = 0; k < V; ++k) v[it][k] = ak_exp(v[it][k] - mt);
    store_chunk<T, V, I>(yr, n, base, vec, l, v, inv);
  }
}
