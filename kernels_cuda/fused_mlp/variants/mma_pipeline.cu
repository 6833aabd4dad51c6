// fused_mlp variant mma_pipeline: both phases on the mma.sync + ldmatrix + cp.async core of matmul's mma_pipeline variant
//
// What it changes and why: the starter's GEMM core is the matmul starter's first version (wmma,
// slices staged through registers, one shared-memory stage), so its three GEMMs run at the pace
// of that core. Here the same two-phase grid (gate/up tiles store silu(g)*u into the scratch
// buffer and count per row panel; down tiles wait for their panel's count, then multiply) runs
// on matmul's mma_pipeline core: mma.sync.m16n8k16 fed by ldmatrix from padded shared memory,
// AK_STAGES slices in flight with cp.async, accumulators in registers until the epilogue. The
// gate and up products share each slice of x. The hidden tiles are read with cp.async.cg, which
// goes to L2, where the other blocks' stores are; a block only waits for blocks of lower index,
// which the GPU starts first, so the wait always ends. The last down tile of a panel sets its
// counters back to zero for the next launch. Within each phase, tiles are numbered in groups of
// AK_GROUP_M row panels walked column by column, so the blocks running side by side share
// columns of the weights in L2 instead of each panel reading all of them from HBM again.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half and __nv_bfloat16.
//
// bench: autokernel bench kernels_cuda/fused_mlp/variants/mma_pipeline.cu --kernel fused_mlp --dtype fp16
// measured: 4362.11 us median, spread 1.9% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 128  // rows per tile (a multiple of 16 * AK_WARPS_M)
#define AK_TILE_N 128  // columns per tile (a multiple of 16 * AK_WARPS_N)
#define AK_TILE_K 64   // depth of one shared-memory slice (a multiple of 16)
#define AK_WARPS_M 2   // warps along M
#define AK_WARPS_N 4   // warps along N
#define AK_STAGES 3    // slices in flight (2 or more)
#define AK_GROUP_M 8   // row panels numbered together, for L2 reuse of the weights

constexpr int kThreads = AK_WARPS_M * AK_WARPS_N * 32;
constexpr int kWarpM = AK_TILE_M / AK_WARPS_M;
constexpr int kWarpN = AK_TILE_N / AK_WARPS_N;
constexpr int kFragM = kWarpM / 16;   // m16 fragments per warp
constexpr int kFragN = kWarpN / 8;    // n8 fragments per warp
static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0 && AK_TILE_K % 16 == 0, "warp tiles are 16x16 steps");
static_assert(kThreads <= 1024, "too many warps for one block");
static_assert(AK_STAGES >= 2, "the pipeline needs 2 or more stages");
static_assert(AK_GROUP_M >= 1, "group at least one row panel");
constexpr int kLdA = AK_TILE_K + 8;   // +16 bytes: ldmatrix rows land in different banks
constexpr int kLdB = AK_TILE_N + 8;
constexpr int kStageElems = AK_TILE_M * kLdA + 2 * AK_TILE_K * kLdB;   // x and both gate/up slices
constexpr int kSmem = kStageElems * AK_STAGES * 2;

// ---- launch geometry, read by the harness from the compiled module ----
// grid: ceil(M/tile_m)·ceil(I/tile_n) + ceil(M/tile_m)·ceil(K/tile_n) blocks
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

// acc[b] += a[m0:, :depth] · bm[b][:depth, n0:] for NB right-hand matrices sharing each slice of a;
// a is [rows, depth] and each bm[b] is [depth, cols], row-major.
template <typename T, int NB>
__device__ __forceinline__ void gemm_tile(unsigned char* smem, const T* a, const T* const (&bm)[NB], int rows, int cols,
                                          int depth, int m0, int n0, float (&acc)[NB][kFragM][kFragN][4]) {
  T* stages = reinterpret_cast<T*>(smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = (warp / AK_WARPS_N) * kWarpM, wn = (warp % AK_WARPS_N) * kWarpN;
  const int k_tiles = (depth + AK_TILE_K - 1) / AK_TILE_K;
  auto load_slice = [&](int kt) {
    if (kt < k_tiles) {
      T* As = stages + (kt % AK_STAGES) * kStageElems;
      load_block<T, AK_TILE_M, AK_TILE_K>(As, kLdA, a, depth, m0, kt * AK_TILE_K, rows, depth);
#pragma unroll
      for (int b = 0; b < NB; ++b)
        load_block<T, AK_TILE_K, AK_TILE_N>(As + AK_TILE_M * kLdA + b * AK_TILE_K * kLdB, kLdB, bm[b], cols,
                                            kt * AK_TILE_K, n0, depth, cols);
    }
    commit_copies();
  };
  for (int kt = 0; kt < AK_STAGES - 1; ++kt) load_slice(kt);
  for (int kt = 0; kt < k_tiles; ++kt) {
    wait_copies<AK_STAGES - 2>();
    __syncthreads();   // slice kt is visible to all, and every warp is done with slice kt - 1
    load_slice(kt + AK_STAGES - 1);
    const T* As = stages + (kt % AK_STAGES) * kStageElems;
#pragma unroll
    for (int kk = 0; kk < AK_TILE_K; kk += 16) {
      unsigned fa[kFragM][4];
#pragma unroll
      for (int i = 0; i < kFragM; ++i) ldmatrix_x4(fa[i], As + (wm + i * 16 + lane % 16) * kLdA + kk + (lane / 16) * 8);
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        const T* Bs = As + AK_TILE_M * kLdA + b * AK_TILE_K * kLdB;
#pragma unroll
        for (int j = 0; j < kFragN; j += 2) {
          unsigned r[4];
          ldmatrix_x4_trans(r, Bs + (kk + lane % 8 + ((lane / 8) % 2) * 8) * kLdB + wn + j * 8 + (lane / 16) * 8);
#pragma unroll
          for (int i = 0; i < kFragM; ++i) {
            mma16816(acc[b][i][j], fa[i], r[0], r[1], T());
            mma16816(acc[b][i][j + 1], fa[i], r[2], r[3], T());
          }
        }
      }
    }
  }
  wait_copies<0>();
  __syncthreads();   // the next tile of this block may reuse the stages at once
}

// Calls f(row, col, i, j, e) for every accumulator element this lane holds inside rows x cols.
template <typename F>
__device__ __forceinline__ void for_each_element(int m0, int n0, int rows, int cols, F f) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = (warp / AK_WARPS_N) * kWarpM, wn = (warp % AK_WARPS_N) * kWarpN;
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + i * 16 + lane / 4 + h * 8;
        const int col = n0 + wn + j * 8 + (lane % 4) * 2;
        if (row < rows && col < cols) f(row, col, i, j, 2 * h);
      }
}

// Tile t of a phase with `panels` row panels and `cols` tiles a row: its (panel, column tile), in
// groups of AK_GROUP_M panels walked column by column.
__device__ __forceinline__ void grouped_tile(int t, int panels, int cols, int& panel, int& col) {
  const int group = t / (AK_GROUP_M * cols);
  const int in_group = t % (AK_GROUP_M * cols);
  const int rows_in_group = min(AK_GROUP_M, panels - group * AK_GROUP_M);
  panel = group * AK_GROUP_M + in_group % rows_in_group;
  col = in_group / rows_in_group;
}

template <typename T>
__device__ __forceinline__ void store2(T* p, float x, float y, bool pair, bool second) {
  if (pair) store_pair(p, x, y);
  else {
    store_one(p, x);
    if (second) store_one(p + 1, y);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
fused_mlp_kernel(const T* __restrict__ x, const T* __restrict__ w_gate, const T* __restrict__ w_up,
                 const T* __restrict__ w_down, T* __restrict__ out, float* __restrict__ hidden,
                 unsigned int* counters, int M, int K, int I) {
  extern __shared__ __align__(128) unsigned char smem[];
  T* h = reinterpret_cast<T*>(hidden);  // the hidden activations, [M, I] in T
  const int panels = (M + AK_TILE_M - 1) / AK_TILE_M;
  const int hidden_tiles = (I + AK_TILE_N - 1) / AK_TILE_N;
  const int out_tiles = (K + AK_TILE_N - 1) / AK_TILE_N;
  unsigned int* ready = counters;      // per panel: hidden tiles stored
  unsigned int* done = counters + M;   // per panel: output tiles finished
  const int first_down = panels * hidden_tiles;

  if ((int)blockIdx.x < first_down) {
    int panel, col;
    grouped_tile(blockIdx.x, panels, hidden_tiles, panel, col);
    const int m0 = panel * AK_TILE_M, n0 = col * AK_TILE_N;
    float acc[2][kFragM][kFragN][4] = {};
    const T* const b[2] = {w_gate, w_up};
    gemm_tile<T, 2>(smem, x, b, M, I, K, m0, n0, acc);
    for_each_element(m0, n0, M, I, [&](int row, int col, int i, int j, int e) {
      const float g0 = acc[0][i][j][e], g1 = acc[0][i][j][e + 1];
      const float y0 = g0 / (1.f + expf(-g0)) * acc[1][i][j][e], y1 = g1 / (1.f + expf(-g1)) * acc[1][i][j][e + 1];
      store2(h + (long long)row * I + col, y0, y1, I % 2 == 0, col + 1 < I);
    });
    __threadfence();  // the tile is visible to every block before the counter says so
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(&ready[panel], 1u);
    return;
  }

  int panel, col;
  grouped_tile(blockIdx.x - first_down, panels, out_tiles, panel, col);
  const int m0 = panel * AK_TILE_M, n0 = col * AK_TILE_N;
  if (threadIdx.x == 0)
    while (atomicAdd(&ready[panel], 0u) < (unsigned)hidden_tiles) {
    }
  __syncthreads();
  __threadfence();
  float acc[1][kFragM][kFragN][4] = {};
  const T* const b[1] = {w_down};
  gemm_tile<T, 1>(smem, h, b, M, K, I, m0, n0, acc);
  for_each_element(m0, n0, M, K, [&](int row, int col, int i, int j, int e) {
    store2(out + (long long)row * K + col, acc[0][i][j][e], acc[0][i][j][e + 1], K % 2 == 0, col + 1 < K);
  });
  if (threadIdx.x == 0 && atomicAdd(&done[panel], 1u) == (unsigned)out_tiles - 1) {
    ready[panel] = 0;  // every block of this panel is past its wait: reset for the next launch
    done[panel] = 0;
  }
}
