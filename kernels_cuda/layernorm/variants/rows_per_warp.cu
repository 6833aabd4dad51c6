// layernorm variant rows_per_warp: one warp (or a slice of one) per row, the row in registers, shuffles only, no shared memory, no barrier
//
// What it changes and why: transformer layernorms run over short rows (GPT-2 and BERT: 768
// columns), where a block of 256 threads per row gives each thread three elements and pays a
// block barrier per statistic. Here a row belongs to a slice of one warp: 32 lanes
// (AK_ROWS_PER_WARP 1), or 16, 8, 4 lanes when a warp takes two, four, eight rows side by side.
// A block is AK_WARPS such warps and handles AK_WARPS * AK_ROWS_PER_WARP rows; nothing is shared
// between warps, so there is no shared memory and no __syncthreads, and a warp past the last row
// leaves at once.
//
// Each lane issues every load of its share of the row (AK_LOAD_BYTES wide: 16-byte vectors when
// the row is a whole number of them) before it uses any, and keeps the elements in registers as
// fp32 (1024 columns are 32 registers a lane). Holding them in their own 16-bit dtype would halve
// that, but the compiler converts each element once and keeps the floats for the three uses
// anyway (measured: 168 registers at 2048 fp16 columns a warp). The mean is a shuffle sum over the slice; the variance is a second shuffle sum, of the squared
// deviations from that mean over the same registers: two exact passes, not the one-pass
// E[x^2] - E[x]^2 that loses digits when the mean is large. weight and bias are read with the
// same vectors (every row reads the same ones, so they come from L1 or L2), and the output is
// written from the registers with vector stores: one read of x, one write of y.
//
// Rows longer than the registers hold (the stages' 4097, 65536, 262144 columns, the benchmark's
// 8192) still work, not fast: the slice walks the row in chunks of the capacity, each lane takes
// the chunk's count, mean and sum of squared deviations from its registers (exact, two passes
// over registers) and merges them into its running ones (Chan's pairwise formula); the lanes are
// merged by shuffles with the same formula in a form symmetric in its two sides, so every lane
// ends with the same bits; then the row is read a second time to write it.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/layernorm/variants/rows_per_warp.cu --kernel layernorm --dtype fp16
// measured: 109.44 us median, spread 1.9% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_WARPS 8              // warps per block (1 to 32)
#define AK_ROWS_PER_WARP 1      // rows one warp handles side by side (1, 2, 4, 8): 32 / AK_ROWS_PER_WARP lanes per row
#define AK_LOAD_BYTES 16        // bytes per load and store (4, 8, 16); scalar when a row is not a whole number of them
#define AK_ROW_CAPACITY 1024    // elements a row's lanes hold in registers (at most 64 a lane); longer rows are read twice

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
// Registers: 64 or fewer (1024 threads per SM) while a lane holds 32 elements or fewer, else 128.
constexpr int kThreadsPerSm = AK_ROW_CAPACITY / kLanes <= 32 ? 1024 : 512;
constexpr int kMinBlocks = AK_WARPS * 32 >= kThreadsPerSm ? 1 : kThreadsPerSm / (AK_WARPS * 32);

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

template <typename T>
struct Layout {
  static constexpr int kVec = AK_LOAD_BYTES / (int)sizeof(T) > 0 ? AK_LOAD_BYTES / (int)sizeof(T) : 1;  // elements per load
  static constexpr int kItems = (AK_ROW_CAPACITY + kLanes * kVec - 1) / (kLanes * kVec);       // loads per lane
  static constexpr int kChunk = kLanes * kVec * kItems;   // elements a slice holds at once
};

// The row element that register k of load it of lane l holds, in a chunk starting at base.
// Vector mode: load it of lane l holds elements base + (it * kLanes + l) * V + [0, V).
// Scalar mode: element base + (it * V + k) * kLanes + l, so that a warp's loads stay coalesced.
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

// The lane's sum of its elements (those past the row are zero) and how many it holds.
template <typename T, int V, int I>
__device__ __forceinline__ void chunk_sum(const float (&v)[I][V], int n, int base, bool vec, int l, float& s, float& c) {
  s = 0.f;
  c = 0.f;
#pragma unroll
  for (int it = 0; it < I; ++it)
#pragma unroll
    for (int k = 0; k < V; ++k) {
      s += v[it][k];
      c += element<V>(base, vec, l, it, k) < n ? 1.f : 0.f;
    }
}

// The lane's sum of squared deviations from mean, over the elements of the row only.
template <typename T, int V, int I>
__device__ __forceinline__ float chunk_squares(const float (&v)[I][V], int n, int base, bool vec, int l, float mean) {
  float ss = 0.f;
#pragma unroll
  for (int it = 0; it < I; ++it)
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float d = element<V>(base, vec, l, it, k) < n ? v[it][k] - mean : 0.f;
      ss += d * d;
    }
  return ss;
}

// Writes (x - mean) * inv * weight + bias for the elements load_chunk read the registers from.
template <typename T, int V, int I>
__device__ __forceinline__ void store_chunk(const float (&v)[I][V], const T* __restrict__ weight, const T* __restrict__ bias,
                                            T* yr, int n, int base, bool vec, int l, float mean, float inv) {
  // The pointers pass through an empty asm that takes inv: the compiler cannot hoist the weight
  // and bias loads above the reductions, where they would hold registers next to the row's (fp32
  // at 1024 columns: 109 registers with them hoisted, 72 without; both bounded to 64, the first spills).
  asm volatile("" : "+l"(weight), "+l"(bias) : "f"(inv));
#pragma unroll
  for (int it = 0; it < I; ++it) {
    if (vec) {
      const int e = element<V>(base, true, l, it, 0);
      if (e < n) {
        const AkVec<T, V> w = *reinterpret_cast<const AkVec<T, V>*>(weight + e);
        const AkVec<T, V> b = *reinterpret_cast<const AkVec<T, V>*>(bias + e);
        float o[V];
#pragma unroll
        for (int k = 0; k < V; ++k)
          o[k] = (v[it][k] - mean) * inv * ak_to_float(w.v[k]) + ak_to_float(b.v[k]);
        AkVec<T, V> out;
        if constexpr (V % 2 == 0) {
#pragma unroll
          for (int k = 0; k < V; k += 2) ak_pack2<T>(&out.v[k], o[k], o[k + 1]);
        } else {
#pragma unroll
          for (int k = 0; k < V; ++k) out.v[k] = ak_from_float<T>(o[k]);
        }
        *reinterpret_cast<AkVec<T, V>*>(yr + e) = out;
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int e = element<V>(base, false, l, it, k);
        if (e < n)
          yr[e] = ak_from_float<T>((v[it][k] - mean) * inv * ak_to_float(weight[e]) + ak_to_float(bias[e]));
      }
    }
  }
}

// Sum over the lanes of one slice; every lane gets the same bits (a + b == b + a).
__device__ __forceinline__ float slice_sum(float v) {
#pragma unroll
  for (int off = kLanes / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Merges the statistics (count, mean, sum of squared deviations) of b into a, Chan's pairwise
// formula written symmetric in a and b, so that both lanes of a shuffle pair get the same bits.
// The products are rounded on their own (__fmul_rn): a fused multiply-add would round one side's
// product and not the other's, and the two lanes would differ.
__device__ __forceinline__ void merge_stats(float& ca, float& ma, float& qa, float cb, float mb, float qb) {
  const float c = ca + cb;
  if (c == 0.f) return;   // both empty
  const float d = mb - ma;   // the other lane's d is -d: the same square
  ma = __fdiv_rn(__fadd_rn(__fmul_rn(ca, ma), __fmul_rn(cb, mb)), c);
  qa = __fadd_rn(__fadd_rn(qa, qb), __fmul_rn(__fmul_rn(d, d), __fdiv_rn(__fmul_rn(ca, cb), c)));
  ca = c;
}

template <typename T>
__global__ void __launch_bounds__(AK_WARPS * 32, kMinBlocks)
layernorm_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                 T* __restrict__ y, int rows, int cols, float eps) {
  using L = Layout<T>;
  constexpr int V = L::kVec, I = L::kItems;
  const int lane = threadIdx.x & 31;
  const long long warp_row = ((long long)blockIdx.x * AK_WARPS + threadIdx.x / 32) * AK_ROWS_PER_WARP;
  if (warp_row >= rows || cols <= 0) return;   // the whole warp leaves together: no shuffle misses a lane
  const long long row = warp_row + lane / kLanes;
  const bool active = row < rows;
  const int l = lane % kLanes;
  const int n = active ? cols : 0;   // a slice past the last row sees an empty row: it loads and writes nothing
  const T* xr = x + (active ? row : 0) * cols;
  T* yr = y + (active ? row : 0) * cols;
  const unsigned long long misaligned = (reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y) |
                                         reinterpret_cast<unsigned long long>(weight) |
                                         reinterpret_cast<unsigned long long>(bias)) % AK_LOAD_BYTES;
  const bool vec = V > 1 && cols % V == 0 && misaligned == 0;
  float v[I][V];

  if (cols <= L::kChunk) {
    load_chunk<T, V, I>(xr, n, 0, vec, l, v);
    float s, c;
    chunk_sum<T, V, I>(v, n, 0, vec, l, s, c);
    const float mean = slice_sum(s) / cols;
    const float var = slice_sum(chunk_squares<T, V, I>(v, n, 0, vec, l, mean)) / cols;
    store_chunk<T, V, I>(v, weight, bias, yr, n, 0, vec, l, mean, rsqrtf(var + eps));
    return;
  }

  // Rows past the registers: running statistics per lane over chunks, then a second read to write.
  float cnt = 0.f, mean = 0.f, m2 = 0.f;
  for (int base = 0; base < n; base += L::kChunk) {
    load_chunk<T, V, I>(xr, n, base, vec, l, v);
    float s, c;
    chunk_sum<T, V, I>(v, n, base, vec, l, s, c);
    if (c > 0.f) {
      const float mc = s / c;
      merge_stats(cnt, mean, m2, c, mc, chunk_squares<T, V, I>(v, n, base, vec, l, mc));
    }
  }
#pragma unroll
  for (int off = kLanes / 2; off > 0; off >>= 1) {
    const float oc = __shfl_xor_sync(0xffffffffu, cnt, off);
    const float om = __shfl_xor_sync(0xffffffffu, mean, off);
    const float oq = __shfl_xor_sync(0xffffffffu, m2, off);
    merge_stats(cnt, mean, m2, oc, om, oq);
  }
  const float inv = rsqrtf(m2 / cols + eps);
  for (int base = 0; base < n; base += L::kChunk) {
    load_chunk<T, V, I>(xr, n, base, vec, l, v);
    store_chunk<T, V, I>(v, weight, bias, yr, n, base, vec, l, mean, inv);
  }
}
