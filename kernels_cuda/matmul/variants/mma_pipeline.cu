// matmul variant mma_pipeline: mma.sync fed from padded shared memory through a multi-stage cp.async pipeline; fp32 on the CUDA cores in the reference's order
//
// What it changes and why: the starter's wmma fragments hide the register layout, load through
// generic shared-memory reads, and send the accumulator through shared memory on its way out.
// Here each warp issues the PTX the tensor cores execute. For fp16 and bf16, ldmatrix.x4 loads
// four 8x8 tiles of x (and of w, whose [N, K] rows are exactly the column-major b that
// mma.sync.m16n8k16 wants, so no transpose) straight into the fragment registers. Shared-memory
// rows are padded by 16 bytes, so the eight rows one ldmatrix phase reads fall in different
// banks. AK_STAGES slices of x and w are in flight with cp.async (zero-filled past the matrix
// edge) while the tensor cores work on the oldest one. Blocks are numbered in groups of
// AK_GROUP_M tile rows, so blocks that run together share slices in L2. The accumulator goes from
// registers straight to global memory, the bias added on the way. Rows whose length is not a
// multiple of 16 bytes cannot use 16-byte copies and load element by element.
// fp32 was split TF32 (each element as big = tf32(v) plus small = tf32(v - big), three m16n8k8
// steps): it failed fp32's check on one-huge-per-row inputs at 48x the tolerance (H200), and no
// reordered sum can pass there (plain_fp32_tile says why), so fp32 now runs CUDA-core FMAs
// along K in order, the reference's result to the bit.
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
// measured: 608.41 us median, spread 0.6% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
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
// fp32's path (plain_fp32_tile): slices of kPlainK along K of a piece of kPlainRows x 64 outputs.
constexpr int kPlainK = 16;
constexpr int kPlainRows = kThreads / 4;
constexpr int kPlainLdX = kPlainRows + 4;   // float4 rows: multiples of 4 floats
constexpr int kPlainLdW = 64 + 4;
constexpr int kPlainSmem = kPlainK * (kPlainLdX + kPlainLdW) * 4;
// The module's shared memory is one number for every dtype: sized as if the stages held fp32
// (rows of AK_TILE_K + 4 floats), as when fp32 ran through them, and at least fp32's slices.
constexpr int kSmemStages = (AK_TILE_M + AK_TILE_N) * (AK_TILE_K + 4) * 4 * AK_STAGES;
constexpr int kSmem = kSmemStages > kPlainSmem ? kSmemStages : kPlainSmem;
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
__device__ __forceinline__ void store_pair(__half* p, float x, float y) { *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y); }
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x, float y) { *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y); }
__device__ __forceinline__ void store_one(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_one(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

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

// fp32: CUDA-core FMAs along K in order, each output's sum exactly as the reference kernel forms
// it (from 0, one fmaf per k, then the bias), so the result is the reference's to the bit. (Split
// TF32 failed here: where one row's huge product cancels, the reference's own fp32 rounding lies
// several times the tolerance from the exact sum, and a reordered sum cannot agree with it; see
// tests/kernels_cuda/split_tf32_test.cpp.) A piece of kPlainRows x 64 outputs at a time: 16 threads
// across its 64 columns, kThreads / 16 down its rows, each a 4 x 4 block; slices of kPlainK along
// K staged in shared memory.
static_assert(kThreads % 16 == 0, "the fp32 path lays 16 threads across 64 columns");
__device__ void plain_fp32_tile(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                                float* __restrict__ y, int M, int N, int K, int has_bias, int m0, int n0, float* smem) {
  float* xs = smem;                          // [kPlainK][kPlainLdX]: a K slice of the piece's rows of x
  float* ws = smem + kPlainK * kPlainLdX;    // [kPlainK][kPlainLdW]: the same of its 64 rows of w
  const int t = threadIdx.x, ty = t / 16, tx = t % 16;
  const int m_end = min(M, m0 + AK_TILE_M), n_end = min(N, n0 + AK_TILE_N);
  for (int pm = m0; pm < m_end; pm += kPlainRows)
    for (int pn = n0; pn < n_end; pn += 64) {
      float acc[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
      for (int k0 = 0; k0 < K; k0 += kPlainK) {
        __syncthreads();   // every thread done with the last slice
        for (int i = t; i < kPlainRows * kPlainK; i += kThreads) {
          const int r = i / kPlainK, kk = i % kPlainK;
          xs[kk * kPlainLdX + r] = pm + r < m_end && k0 + kk < K ? x[(long long)(pm + r) * K + k0 + kk] : 0.f;
        }
        for (int i = t; i < 64 * kPlainK; i += kThreads) {
          const int r = i / kPlainK, kk = i % kPlainK;
          ws[kk * kPlainLdW + r] = pn + r < n_end && k0 + kk < K ? w[(long long)(pn + r) * K + k0 + kk] : 0.f;
        }
        __syncthreads();
        // Past K the slice holds zeros: fmaf(0, 0, acc) is acc itself (acc is never -0, starting at +0).
#pragma unroll
        for (int k = 0; k < kPlainK; ++k) {
          const float4 a = *reinterpret_cast<const float4*>(xs + k * kPlainLdX + ty * 4);
          const float4 b = *reinterpret_cast<const float4*>(ws + k * kPlainLdW + tx * 4);
          const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int r = pm + ty * 4 + i, c = pn + tx * 4 + j;
          if (r < m_end && c < n_end) y[(long long)r * N + c] = has_bias ? acc[i][j] + bias[c] : acc[i][j];
        }
    }
}

// fp16 and bf16: mma.sync m16n8k16 from cp.async stages.
template <typename T>
__device__ void tensor_core_tile(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                 T* __restrict__ y, int M, int N, int K, int has_bias, int m0, int n0, unsigned char* smem) {
  constexpr int kLd = Layout<T>::kLd;
  constexpr int kStageElems = Layout<T>::kStageElems;
  T* stages = reinterpret_cast<T*>(smem);

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

template <typename T>
__global__ void __launch_bounds__(kThreads)
matmul_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y,
              float* __restrict__ workspace, unsigned* tile_counters, int M, int N, int K, int has_bias) {
  extern __shared__ __align__(128) unsigned char smem[];
  // Grouped numbering: AK_GROUP_M tile rows are walked column by column.
  const int tiles_m = (M + AK_TILE_M - 1) / AK_TILE_M, tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N;
  const int group = blockIdx.x / (AK_GROUP_M * tiles_n);
  const int rows_in_group = min(AK_GROUP_M, tiles_m - group * AK_GROUP_M);
  const int in_group = blockIdx.x % (AK_GROUP_M * tiles_n);
  const int m0 = (group * AK_GROUP_M + in_group % rows_in_group) * AK_TILE_M;
  const int n0 = (in_group / rows_in_group) * AK_TILE_N;
  if constexpr (sizeof(T) == 4) plain_fp32_tile(x, w, bias, y, M, N, K, has_bias, m0, n0, reinterpret_cast<float*>(smem));
  else tensor_core_tile<T>(x, w, bias, y, M, N, K, has_bias, m0, n0, smem);
}
