// matmul variant mma_pipeline: mma.sync m16n8k16 fed by ldmatrix from padded shared memory, a multi-stage cp.async pipeline
//
// What it changes and why: the starter's wmma fragments hide the register layout, load through
// generic shared-memory reads, and send the accumulator through shared memory on its way out.
// Here each warp issues the PTX the tensor cores execute: ldmatrix.x4 loads four 8x8 tiles of a
// (and, transposed, of b) straight into the fragment registers of mma.sync.m16n8k16, fp32
// accumulation. Shared-memory rows are padded by 16 bytes, so the eight rows one ldmatrix phase
// reads fall in eight different bank groups (the effect of a swizzle, without the index
// arithmetic). AK_STAGES slices of a and b are in flight with cp.async (zero-filled past the
// matrix edge) while the tensor cores work on the oldest one. Blocks are numbered in groups of
// AK_GROUP_M tile rows, so blocks that run together share slices of a and b in L2. The
// accumulator goes from registers straight to global memory. Rows whose length is not a multiple
// of 8 elements cannot use 16-byte copies and load element by element.
// Not yet: wgmma with TMA (sm_90a), which the Hopper tensor cores need for their full rate.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half and __nv_bfloat16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 128  // rows of c per block (a multiple of 16 * AK_WARPS_M)
#define AK_TILE_N 128  // columns of c per block (a multiple of 16 * AK_WARPS_N)
#define AK_TILE_K 64   // depth of one shared-memory slice (a multiple of 16)
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
constexpr int kLdA = AK_TILE_K + 8;   // +16 bytes: ldmatrix rows land in different banks
constexpr int kLdB = AK_TILE_N + 8;
constexpr int kStageElems = AK_TILE_M * kLdA + AK_TILE_K * kLdB;
constexpr int kSmem = kStageElems * AK_STAGES * 2;

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
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
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

__device__ __forceinline__ void store_pair(__half* p, float x, float y) { *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y); }
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x, float y) { *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y); }
__device__ __forceinline__ void store_one(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_one(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

// Copies a ROWS x COLS block of a row-major matrix (row stride ld, bounds R x C) at (r0, c0) into
// shared memory (row stride lds), zeros past the edge. 16-byte chunks go through cp.async when
// the rows allow it (ld a multiple of 8); otherwise element by element.
template <typename T, int ROWS, int COLS>
__device__ __forceinline__ void load_block(T* s, int lds, const T* g, int ld, int r0, int c0, int R, int C) {
  constexpr int kChunks = ROWS * COLS / 8;
  if (ld % 8 == 0) {
#pragma unroll
    for (int i = threadIdx.x; i < kChunks; i += kThreads) {
      const int r = i / (COLS / 8), c = (i % (COLS / 8)) * 8;
      const int gr = r0 + r, gc = c0 + c;
      const bool in = gr < R && gc < C;   // C % 8 == 0 here, so a chunk is whole or absent
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

template <typename T>
__global__ void __launch_bounds__(kThreads)
matmul_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
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
      T* As = stages + (kt % AK_STAGES) * kStageElems;
      load_block<T, AK_TILE_M, AK_TILE_K>(As, kLdA, a, K, m0, kt * AK_TILE_K, M, K);
      load_block<T, AK_TILE_K, AK_TILE_N>(As + AK_TILE_M * kLdA, kLdB, b, N, kt * AK_TILE_K, n0, K, N);
    }
    commit_copies();
  };
  for (int kt = 0; kt < AK_STAGES - 1; ++kt) load_slice(kt);

  for (int kt = 0; kt < k_tiles; ++kt) {
    wait_copies<AK_STAGES - 2>();
    __syncthreads();   // slice kt is visible to all, and every warp is done with slice kt - 1
    load_slice(kt + AK_STAGES - 1);   // into the stage slice kt - 1 used
    const T* As = stages + (kt % AK_STAGES) * kStageElems;
    const T* Bs = As + AK_TILE_M * kLdA;
#pragma unroll
    for (int kk = 0; kk < AK_TILE_K; kk += 16) {
      unsigned fa[kFragM][4], fb[kFragN][2];
#pragma unroll
      for (int i = 0; i < kFragM; ++i)   // lanes 0-15 point at rows 0-15 (k 0-7), 16-31 at k 8-15
        ldmatrix_x4(fa[i], As + (wm + i * 16 + lane % 16) * kLdA + kk + (lane / 16) * 8);
#pragma unroll
      for (int j = 0; j < kFragN; j += 2) {   // two n8 fragments per x4: (k 0-7, k 8-15) x (n, n + 8)
        unsigned r[4];
        ldmatrix_x4_trans(r, Bs + (kk + lane % 8 + ((lane / 8) % 2) * 8) * kLdB + wn + j * 8 + (lane / 16) * 8);
        fb[j][0] = r[0]; fb[j][1] = r[1]; fb[j + 1][0] = r[2]; fb[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < kFragN; ++j) mma16816(acc[i][j], fa[i], fb[j][0], fb[j][1], T());
    }
  }
  wait_copies<0>();

  // Each lane holds rows lane/4 and lane/4 + 8, columns 2 * (lane % 4) and the next, of every fragment.
  const bool pairs = N % 2 == 0;
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + i * 16 + lane / 4 + h * 8;
        const int col = n0 + wn + j * 8 + (lane % 4) * 2;
        if (row >= M || col >= N) continue;
        T* p = c + (long long)row * N + col;
        if (pairs) store_pair(p, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        else {
          store_one(p, acc[i][j][2 * h]);
          if (col + 1 < N) store_one(p + 1, acc[i][j][2 * h + 1]);
        }
      }
}
