// softmax variant row_one_barrier: the row in registers, (max, sum) pairs combined with one block barrier, the next row prefetched
//
// What it changes and why: row_in_registers reads the row once, but between its load and its
// store sit two block reductions (the max, then the sum of exponentials), each with its barriers,
// while the block issues no memory traffic; at 8192 columns it stays well under the copy rate
// that rmsnorm's one reduction reaches with the same structure. Here each thread first takes the
// max m of the elements it holds and the sum s of exp(x - m) over them, from its registers. The
// block then combines the (m, s) pairs once: a shuffle max in each warp, one exponential per lane
// to rescale s to the warp's max, a shuffle sum; one shared-memory exchange of the warps' pairs
// behind a single __syncthreads; the same two shuffle steps over the warps' pairs. Exponentials
// happen at the two level boundaries only (three per thread in all), never per shuffle step:
// that per-step cost is what made an earlier single (max, sum) reduction slower than two. The
// outputs are the thread's exponentials times exp(m - max) / sum, packed two at a time for the
// 16-bit types.
//
// Overlap (AK_PREFETCH 1): a row group takes AK_ROWS_PER_GROUP rows in turn, and as soon as it
// has its row in registers and its local max, it issues cp.async copies of its next row into
// shared memory, each thread the very 16-byte pieces it will read back itself (so the buffer
// needs no barrier of its own), and the exponentials, the combine and the stores of this row run
// while the next row is on its way. The shared-memory pairs alternate between two slots by row
// parity, so a warp that runs ahead onto the next row never overwrites pairs still being read.
//
// Rows longer than AK_ROW_CAPACITY (the stages' 65536 and 262144 columns) still work, not fast:
// the group walks the row in chunks, keeps a running (m, s) per thread rescaled once per chunk,
// combines once, and reads the row a second time to write it.
//
// Exponentials: ex2.approx on (x - m) * log2(e), what __expf does; the difference is taken
// before the scale because folding log2(e) into one fma with x loses the low bits of x*log2(e)
// for large inputs (near fp16's maximum that is 0.3% of the result, past every tolerance here).
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/softmax/variants/row_one_barrier.cu --kernel softmax --dtype fp16
// measured: 76.35 us median, spread 3.5% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_THREADS 256          // threads per block
#define AK_GROUPS 1             // row groups side by side in a block, AK_THREADS / AK_GROUPS threads each (a power-of-two number of warps)
#define AK_ROWS_PER_GROUP 1     // rows each group takes in turn (1 to 16); the block handles AK_GROUPS * AK_ROWS_PER_GROUP rows
#define AK_PREFETCH 0           // 1: cp.async the group's next row into shared memory while this one is finished (needs AK_ROWS_PER_GROUP > 1)
#define AK_LOAD_BYTES 16        // bytes per load and store (4, 8, 16; 16 with AK_PREFETCH); scalar when a row is not a whole number of them
#define AK_ROW_CAPACITY 8192    // elements a group holds in registers; longer rows are read twice
#define AK_MIN_BLOCKS 0         // blocks per SM promised to the compiler (__launch_bounds__), which caps registers; 0 for no promise

constexpr int kGroupThreads = AK_THREADS / AK_GROUPS;
constexpr int kWarpsPerGroup = kGroupThreads / 32;
static_assert(AK_THREADS % 32 == 0 && AK_THREADS >= 32 && AK_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(AK_GROUPS >= 1 && AK_THREADS % AK_GROUPS == 0 && kGroupThreads % 32 == 0, "each group is whole warps");
static_assert((kWarpsPerGroup & (kWarpsPerGroup - 1)) == 0, "a power-of-two number of warps per group (the pairs combine by xor shuffles)");
static_assert(AK_ROWS_PER_GROUP >= 1 && AK_ROWS_PER_GROUP <= 16, "1 to 16 rows per group");
static_assert(AK_PREFETCH == 0 || AK_PREFETCH == 1, "AK_PREFETCH is 0 or 1");
static_assert(AK_PREFETCH == 0 || AK_ROWS_PER_GROUP > 1, "prefetch needs a next row: AK_ROWS_PER_GROUP > 1");
static_assert(AK_LOAD_BYTES == 4 || AK_LOAD_BYTES == 8 || AK_LOAD_BYTES == 16, "loads of 4, 8 or 16 bytes");
static_assert(AK_PREFETCH == 0 || AK_LOAD_BYTES == 16, "the prefetch copies 16-byte pieces: AK_LOAD_BYTES 16");
static_assert(AK_ROW_CAPACITY >= kGroupThreads, "at least one element per thread");
static_assert(AK_ROW_CAPACITY / kGroupThreads <= 64, "at most 64 elements per thread in registers");
static_assert(AK_MIN_BLOCKS >= 0 && AK_MIN_BLOCKS <= 32, "0 to 32 blocks per SM");

// The prefetch buffer, one row's capacity per group, sized for the widest dtype (float): the
// harness reads one ak_smem_bytes for the module, whatever the dtype.
constexpr int kPieces4 = (AK_ROW_CAPACITY * 4 + kGroupThreads * AK_LOAD_BYTES - 1) / (kGroupThreads * AK_LOAD_BYTES);
constexpr int kPrefetchBytes = AK_PREFETCH ? AK_GROUPS * kGroupThreads * AK_LOAD_BYTES * kPieces4 : 0;

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_rows_per_block = AK_GROUPS * AK_ROWS_PER_GROUP;
extern "C" __constant__ int ak_smem_bytes = kPrefetchBytes;

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

__device__ __forceinline__ void ak_cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void ak_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void ak_cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

template <typename T>
struct Layout {
  static constexpr int kVec = AK_LOAD_BYTES / (int)sizeof(T) > 0 ? AK_LOAD_BYTES / (int)sizeof(T) : 1;  // elements per load
  static constexpr int kItems = (AK_ROW_CAPACITY + kGroupThreads * kVec - 1) / (kGroupThreads * kVec);  // loads per thread
  static constexpr int kChunk = kGroupThreads * kVec * kItems;   // elements a group holds at once
};

// Where load it, element k of thread l sits in a chunk: vectors of kVec side by side in vector
// mode; in scalar mode element (it * kVec + k) * kGroupThreads + l, so a warp's loads stay coalesced.
template <int V>
__device__ __forceinline__ int element_at(bool vec, int it, int k, int l) {
  return vec ? (it * kGroupThreads + l) * V + k : (it * V + k) * kGroupThreads + l;
}

// Loads elements [base, base + kChunk) of a row of n into the thread's registers, -inf past n.
template <typename T, int V, int I>
__device__ __forceinline__ void load_chunk(const T* xr, int n, int base, bool vec, int l, float (&v)[I][V]) {
#pragma unroll
  for (int it = 0; it < I; ++it) {
    if (vec) {
      const int e = base + element_at<V>(true, it, 0, l);
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
        const int e = base + element_at<V>(false, it, k, l);
        v[it][k] = e < n ? ak_to_float(xr[e]) : ak_neg_inf();
      }
    }
  }
}

// The prefetch: the thread's own vectors of a row of n (vector mode, the whole row in one chunk)
// into the group's buffer, at the same offsets the row has in global memory.
template <typename T, int V, int I>
__device__ __forceinline__ void copy_row_async(const T* xr, int n, int l, T* buf) {
#pragma unroll
  for (int it = 0; it < I; ++it) {
    const int e = element_at<V>(true, it, 0, l);
    if (e < n) ak_cp_async16(buf + e, xr + e);
  }
  ak_cp_async_commit();
}

template <typename T, int V, int I>
__device__ __forceinline__ void load_copied_row(const T* buf, int n, int l, float (&v)[I][V]) {
  ak_cp_async_wait_all();   // this thread's own pieces only: no barrier needed
#pragma unroll
  for (int it = 0; it < I; ++it) {
    const int e = element_at<V>(true, it, 0, l);
    if (e < n) {
      const AkVec<T, V> a = *reinterpret_cast<const AkVec<T, V>*>(buf + e);
#pragma unroll
      for (int k = 0; k < V; ++k) v[it][k] = ak_to_float(a.v[k]);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) v[it][k] = ak_neg_inf();
    }
  }
}

// Writes v * scale to the elements load_chunk read the registers from.
template <typename T, int V, int I>
__device__ __forceinline__ void store_chunk(T* yr, int n, int base, bool vec, int l, const float (&v)[I][V], float scale) {
#pragma unroll
  for (int it = 0; it < I; ++it) {
    if (vec) {
      const int e = base + element_at<V>(true, it, 0, l);
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
        const int e = base + element_at<V>(false, it, k, l);
        if (e < n) yr[e] = ak_from_float<T>(v[it][k] * scale);
      }
    }
  }
}

// Max of m over `width` lanes (xor partners), and the sum of s rescaled to that max: one
// exponential per lane.
template <int kWidth>
__device__ __forceinline__ void lanes_combine(float m, float s, float& mt, float& st) {
  mt = m;
#pragma unroll
  for (int off = kWidth / 2; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
  st = ak_rescale(s, m, mt);
#pragma unroll
  for (int off = kWidth / 2; off > 0; off >>= 1) st += __shfl_xor_sync(0xffffffffu, st, off);
}

// The group's (max, sum) from every thread's (m, s): warp level, one exchange, then over the
// group's warps. The only barrier a row costs; `parity` picks the slot of this row.
__device__ __forceinline__ void group_combine(float m, float s, int group, int parity, float& mt, float& st) {
  __shared__ float2 pairs[2][AK_THREADS / 32];
  float mw, sw;
  lanes_combine<32>(m, s, mw, sw);
  const int lane = threadIdx.x & 31;
  if (lane == 0) pairs[parity][threadIdx.x / 32] = make_float2(mw, sw);
  __syncthreads();
  if constexpr (kWarpsPerGroup == 1) {
    mt = mw;
    st = sw;
  } else {
    const float2 p = pairs[parity][group * kWarpsPerGroup + (lane % kWarpsPerGroup)];
    lanes_combine<kWarpsPerGroup>(p.x, p.y, mt, st);
  }
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS, AK_MIN_BLOCKS)
softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
  using L = Layout<T>;
  constexpr int V = L::kVec, I = L::kItems;
  extern __shared__ __align__(16) unsigned char ak_dynamic_smem[];
  const int group = threadIdx.x / kGroupThreads;
  const int l = threadIdx.x % kGroupThreads;
  const long long block_row = (long long)blockIdx.x * AK_GROUPS * AK_ROWS_PER_GROUP;
  const bool vec = V > 1 && cols % V == 0 && reinterpret_cast<unsigned long long>(x) % AK_LOAD_BYTES == 0 &&
                   reinterpret_cast<unsigned long long>(y) % AK_LOAD_BYTES == 0;
  const bool fits = cols <= L::kChunk;
  const bool prefetch = AK_PREFETCH && vec && fits;   // the same for every thread of the launch
  // Row j of the group is block_row + j * AK_GROUPS + group: the groups of a block work on neighbouring rows.
  auto row_of = [&](int j) { return block_row + (long long)j * AK_GROUPS + group; };
  T* buf = reinterpret_cast<T*>(ak_dynamic_smem) + (long long)group * (kPrefetchBytes / AK_GROUPS / (int)sizeof(T));
  if (prefetch && row_of(0) < rows) copy_row_async<T, V, I>(x + row_of(0) * cols, cols, l, buf);

  float v[I][V];
  for (int j = 0; j < AK_ROWS_PER_GROUP; ++j) {
    if (block_row + (long long)j * AK_GROUPS >= rows) break;   // the same for the whole block: no barrier is skipped by some only
    const long long row = row_of(j);
    const bool active = row < rows;
    const int n = active ? cols : 0;   // a group past the last row sees an empty row: it loads and writes nothing
    const T* xr = x + (active ? row : 0) * cols;
    T* yr = y + (active ? row : 0) * cols;

    if (fits) {
      if (prefetch) load_copied_row<T, V, I>(buf, n, l, v);
      else load_chunk<T, V, I>(xr, n, 0, vec, l, v);
      float m = ak_neg_inf();
#pragma unroll
      for (int it = 0; it < I; ++it)
#pragma unroll
        for (int k = 0; k < V; ++k) m = fmaxf(m, v[it][k]);
      // The buffer's pieces are in registers now (m used them all): the next row may land there.
      if (prefetch && j + 1 < AK_ROWS_PER_GROUP && row_of(j + 1) < rows)
        copy_row_async<T, V, I>(x + row_of(j + 1) * cols, cols, l, buf);
      const float ms = m == ak_neg_inf() ? 0.f : m;   // a thread holding only padding: exp(-inf) = 0, never NaN
      float s = 0.f;
#pragma unroll
      for (int it = 0; it < I; ++it)
#pragma unroll
        for (int k = 0; k < V; ++k) {
          v[it][k] = ak_exp(v[it][k] - ms);
          s += v[it][k];
        }
      float mt, st;
      group_combine(m, s, group, j & 1, mt, st);
      store_chunk<T, V, I>(yr, n, 0, vec, l, v, ak_rescale(1.f, m, mt) / st);
      continue;
    }

    // Rows past the registers: a running (m, s) per thread over chunks, then a second read to write.
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
    group_combine(m, s, group, j & 1, mt, st);
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
}
