// matmul variant mma_pipeline: mma.sync fed from padded shared memory through a multi-stage cp.async pipeline; fp32 at fp32 accuracy as split TF32 (three m16n8k8 products)
//
// What it changes and why: the starter's wmma fragments hide the register layout, load through
// generic shared-memory reads, and send the accumulator through shared memory on its way out.
// Here each warp issues the PTX the tensor cores execute. For fp16 and bf16, ldmatrix.x4 loads
// four 8x8 tiles of x (and of w, whose [N, K] rows are exactly the column-major b that
// mma.sync.m16n8k16 wants, so no transpose) straight into the fragment registers. For fp32, the
// tensor cores' TF32 keeps 10 bits of mantissa, far from fp32's 23: each element v is split into
// big = tf32(v) and small = tf32(v - big), and each m16n8k8 step is issued three times,
// small*big + big*small + big*big, accumulated in fp32 (small*small lies below fp32's precision).
// That is within fp32's own error of the CUDA-core product, at three tensor-core steps where the
// CUDA cores would need sixteen FMA instructions per thread. Shared-memory rows are padded by 16
// bytes, so the eight rows one ldmatrix phase reads (or the eight rows of one scalar fp32
// fragment load) fall in different banks. AK_STAGES slices of x and w are in flight with cp.async
// (zero-filled past the matrix edge) while the tensor cores work on the oldest one. Blocks are
// numbered in groups of AK_GROUP_M tile rows, so blocks that run together share slices in L2. The
// accumulator goes from registers straight to global memory, the bias added on the way. Rows
// whose length is not a multiple of 16 bytes cannot use 16-byte copies and load element by element.
// Not yet: wgmma with TMA (sm_90a), which the Hopper tensor cores need for their full rate.
//
// workspace (fp32, shaped as y, undefined at every launch) and tile_counters (zero at every
// launch, to be left zero) are the contract's room for split-K and stream-K; unused here.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/matmul/variants/mma_pipeline.cu --kernel matmul --dtype fp16
// measured: FAIL, no time: its fp32 instantiation is wrong on one-huge-per-row inputs (numerical stability, 48x the tolerance; NVIDIA H200, 2026-11-27)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 128  // rows of y per block (a multiple of 16 * AK_WARPS_M)
#define AK_TILE_N 128  // columns of y per block (a multiple of 16 * AK_WARPS_N)
#define AK_TILE_K 32   // depth of one shared-memory slice (a multiple of 16)
#define AK_WARPS_M 2   // warps along M
#define AK_WARPS_N 4   // warps along N
#define AK_STAGES 3    // slices in flight (2 or more)
#define AK_GROUP_M 8   // tile rows numbered together, for L2 reuse

constexpr int kThreads = AK_WARPS_M * AK_WARPS_N * 32;
constexpr int kWarpM = AK_TILE_M / AK_WARPS_M;
constexpr int kWarpN = AK_TILE_N / AK_WARPS_N;
constexpr int kFragM = kWarpM / 16;   // m16 fragments per warp
constexpr int kFragN = kWarpN / 8;    // n8 fragments per warp
static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0 && AK_TILE_K % 16 == 0, "warp tiles are 16x16 steps");
static_assert(kThreads <= 1024, "too many warps for one block");
static_assert(AK_STAGES >= 2, "the pipeline needs 2 or more stages");
static_assert(AK_GROUP_M >= 1, "group at least one tile row");
// Row stride in elements of T (x's and w's slices alike, K-contiguous rows): +16 bytes of padding.
template <typename T>
struct Layout {
  static constexpr int kLd = AK_TILE_K + 16 / (int)sizeof(T);
  static constexpr int kStageElems = (AK_TILE_M + AK_TILE_N) * kLd;
};
// The module's shared memory is one number for every dtype: the widest element's (fp32 rows of
// AK_TILE_K + 4 floats, Layout<float>).
constexpr int kSmem = (AK_TILE_M + AK_TILE_N) * (AK_TILE_K + 4) * 4 * AK_STAGES;
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have (sized for fp32)");

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = AK_TILE_M;
extern "C" __constant__ int ak_tile_n = AK_TILE_N;
extern "C" __constant__ int ak_smem_bytes = kSmem;

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared; `bytes` < 16 zero-fills the rest (0: all zeros, src not read).
__device__ __forceinline__ void copy16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

// c += a * b on one 16x8x16 step; the element type picks the instruction.
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, __half) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, __nv_bfloat16) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// c += a * b on one 16x8x8 TF32 step.
__device__ __forceinline__ void mma1688(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// v rounded to TF32 (nearest, ties away from zero), as the tensor cores take it.
__device__ __forceinline__ unsigned to_tf32(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
  return r;
}
// big = tf32(v), small = tf32(v - big).
__device__ __forceinline__ void split(float v, unsigned& big, unsigned& small) {
  big = to_tf32(v);
  small = to_tf32(v - __uint_as_float(big));
}

__device__ __forceinline__ void store_pair(__half* p, float x, float y) { *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y); }
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x, float y) { *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y); }
__device__ __forceinline__ void store_pair(float* p, float x, float y) { *reinterpret_cast<float2*>(p) = make_float2(x, y); }
__device__ __forceinline__ void store_one(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_one(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ void store_one(float* p, float x) { *p = x; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(float v) { return v; }

// Copies a ROWS x COLS block of a row-major matrix (row stride ld, bounds R x C) at (r0, c0) into
// shared memory (row stride lds), zeros past the edge. 16-byte chunks go through cp.async when
// the rows allow it (ld a multiple of 16 bytes); otherwise element by element.
template <typename T, int ROWS, int COLS>
__device__ __forceinline__ void load_block(T* s, int lds, const T* g, int ld, int r0, int c0, int R, int C) {
  constexpr int kVec = 16 / (int)sizeof(T);
  constexpr int kChunks = ROWS * COLS / kVec;
  if (ld % kVec == 0) {
#pragma unroll
    for (int i = threadIdx.x; i < kChunks; i += kThreads) {
      const int r = i / (COLS / kVec), c = (i % (COLS / kVec)) * kVec;
      const int gr = r0 + r, gc = c0 + c;
      const bool in = gr < R && gc < C;   // C % kVec == 0 here, so a chunk is whole or absent
      copy16(s + r * lds + c, in ? g + (long long)gr * ld + gc : g, in ? 16 : 0);
    }
  } else {
    T zero;
    store_one(&zero, 0.f);
    for (int i = threadIdx.x; i < ROWS * COLS; i += kThreads) {
      const int r = i / COLS, c = i % COLS;
      const int gr = r0 + r, gc = c0 + c;
      s[r * lds + c] = (gr < R && gc < C) ? g[(long long)gr * ld + gc] : zero;
    }
  }
}

// One slice of x (xs) times w (ws) into the warp's accumulators, 16-bit elements: per 16 of K,
// ldmatrix x4 gives one m16 fragment of x, or the two k8 halves of two n8 fragments of w.
template <typename T>
__device__ __forceinline__ void multiply_slice(float (&acc)[kFragM][kFragN][4], const T* xs, const T* ws, int wm, int wn,
                                               int lane) {
  constexpr int kLd = Layout<T>::kLd;
  static_assert(kFragN % 2 == 0, "w's fragments are loaded in pairs");
#pragma unroll
  for (int kk = 0; kk < AK_TILE_K; kk += 16) {
    unsigned fa[kFragM][4], fb[kFragN][2];
#pragma unroll
    for (int i = 0; i < kFragM; ++i)   // lanes 0-15 point at rows 0-15 (k 0-7), 16-31 at k 8-15
      ldmatrix_x4(fa[i], xs + (wm + i * 16 + lane % 16) * kLd + kk + (lane / 16) * 8);
#pragma unroll
    for (int j = 0; j < kFragN; j += 2) {   // matrices (n, k 0-7), (n, k 8-15), (n + 8, k 0-7), (n + 8, k 8-15)
      unsigned r[4];
      ldmatrix_x4(r, ws + (wn + j * 8 + (lane / 16) * 8 + lane % 8) * kLd + kk + ((lane / 8) % 2) * 8);
      fb[j][0] = r[0]; fb[j][1] = r[1]; fb[j + 1][0] = r[2]; fb[j + 1][1] = r[3];
    }
#pragma unroll
    for (int i = 0; i < kFragM; ++i)
#pragma unroll
      for (int j = 0; j < kFragN; ++j) mma16816(acc[i][j], fa[i], fb[j][0], fb[j][1], T());
  }
}

// fp32: per 8 of K, each lane reads its fragment elements (x: rows g, g + 8 at k t, t + 4; w: row
// g at k t, t + 4, with g = lane / 4, t = lane % 4), splits them, and issues three TF32 steps.
__device__ __forceinline__ void multiply_slice(float (&acc)[kFragM][kFragN][4], const float* xs, const float* ws, int wm,
                                               int wn, int lane) {
  constexpr int kLd = Layout<float>::kLd;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kk = 0; kk < AK_TILE_K; kk += 8) {
    unsigned a_big[kFragM][4], a_small[kFragM][4], b_big[kFragN][2], b_small[kFragN][2];
#pragma unroll
    for (int i = 0; i < kFragM; ++i) {
      const float* p = xs + (wm + i * 16 + g) * kLd + kk + t;
      split(p[0], a_big[i][0], a_small[i][0]);
      split(p[8 * kLd], a_big[i][1], a_small[i][1]);
      split(p[4], a_big[i][2], a_small[i][2]);
      split(p[8 * kLd + 4], a_big[i][3], a_small[i][3]);
    }
#pragma unroll
    for (int j = 0; j < kFragN; ++j) {
      const float* p = ws + (wn + j * 8 + g) * kLd + kk + t;
      split(p[0], b_big[j][0], b_small[j][0]);
      split(p[4], b_big[j][1], b_small[j][1]);
    }
#pragma unroll
    for (int i = 0; i < kFragM; ++i)
#pragma unroll
      for (int j = 0; j < kFragN; ++j) {
        // The small terms first, so that they are not lost against a large running sum.
        mma1688(acc[i][j], a_small[i], b_big[j][0], b_big[j][1]);
        mma1688(acc[i][j], a_big[i], b_small[j][0], b_small[j][1]);
        mma1688(acc[i][j], a_big[i], b_big[j][0], b_big[j][1]);
      }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
matmul_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y,
              float* __restrict__ workspace, unsigned* tile_counters, int M, int N, int K, int has_bias) {
  constexpr int kLd = Layout<T>::kLd;
  constexpr int kStageElems = Layout<T>::kStageElems;
  extern __shared__ __align__(128) unsigned char smem[];
  T* stages = reinterpret_cast<T*>(smem);

  // Grouped numbering: AK_GROUP_M tile rows are walked column by column.
  const int tiles_m = (M + AK_TILE_M - 1) / AK_TILE_M, tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N;
  const int group = blockIdx.x / (AK_GROUP_M * tiles_n);
  const int rows_in_group = min(AK_GROUP_M, tiles_m - group * AK_GROUP_M);
  const int in_group = blockIdx.x % (AK_GROUP_M * tiles_n);
  const int m0 = (group * AK_GROUP_M + in_group % rows_in_group) * AK_TILE_M;
  const int n0 = (in_group / rows_in_group) * AK_TILE_N;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = (warp / AK_WARPS_N) * kWarpM, wn = (warp % AK_WARPS_N) * kWarpN;

  float acc[kFragM][kFragN][4];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  // Slice kt goes to stage kt % AK_STAGES, one commit group per slice (empty past the end), so
  // waiting for all but the newest AK_STAGES - 2 groups means slice kt has landed.
  const int k_tiles = (K + AK_TILE_K - 1) / AK_TILE_K;
  auto load_slice = [&](int kt) {
    if (kt < k_tiles) {
      T* xs = stages + (kt % AK_STAGES) * kStageElems;
      load_block<T, AK_TILE_M, AK_TILE_K>(xs, kLd, x, K, m0, kt * AK_TILE_K, M, K);
      load_block<T, AK_TILE_N, AK_TILE_K>(xs + AK_TILE_M * kLd, kLd, w, K, n0, kt * AK_TILE_K, N, K);
    }
    commit_copies();
  };
  for (int kt = 0; kt < AK_STAGES - 1; ++kt) load_slice(kt);

  for (int kt = 0; kt < k_tiles; ++kt) {
    wait_copies<AK_STAGES - 2>();
    __syncthreads();   // slice kt is visible to all, and every warp is done with slice kt - 1
    load_slice(kt + AK_STAGES - 1);   // into the stage slice kt - 1 used
    const T* xs = stages + (kt % AK_STAGES) * kStageElems;
    multiply_slice(acc, xs, xs + AK_TILE_M * kLd, wm, wn, lane);
  }
  wait_copies<0>();

  // Each lane holds rows lane/4 and lane/4 + 8, columns 2 * (lane % 4) and the next, of every fragment.
  const bool pairs = N % 2 == 0;
#pragma unroll
  for (int j = 0; j < kFragN; ++j) {
    const int col = n0 + wn + j * 8 + (lane % 4) * 2;
    const float b0 = has_bias && col < N ? to_float(bias[col]) : 0.f;
    const float b1 = has_bias && col + 1 < N ? to_float(bias[col + 1]) : 0.f;
#pragma unroll
    for (int i = 0; i < kFragM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + i * 16 + lane / 4 + h * 8;
        if (row >= M || col >= N) continue;
        T* p = y + (long long)row * N + col;
        const float v0 = acc[i][j][2 * h] + b0, v1 = acc[i][j][2 * h + 1] + b1;
        if (pairs) store_pair(p, v0, v1);
        else {
          store_one(p, v0);
          if (col + 1 < N) store_one(p + 1, v1);
        }
      }
  }
}
