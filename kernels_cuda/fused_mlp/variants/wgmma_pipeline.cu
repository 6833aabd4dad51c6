// fused_mlp variant wgmma_pipeline: both phases on the wgmma core of matmul's wgmma_pipeline variant, gate and up from one slice of x
//
// What it changes and why: the mma_pipeline variant runs the starter's two-phase grid on
// mma.sync, which on an H100 reaches about half of what the tensor cores do. Here both phases run
// on matmul's wgmma_pipeline core: slices of 64 along K travel with cp.async into AK_STAGES
// stages in the 128-byte swizzle, and each warpgroup multiplies its 64 rows by the whole tile
// width with asynchronous wgmma steps read from shared memory, one batch kept in flight. A
// gate/up tile loads each slice of x once for both weight slices and keeps both accumulators in
// registers, applies silu(g)*u there and stores the hidden tile in T to the scratch buffer, then
// counts for its row panel; a down tile waits for its panel's count and reads the hidden slices
// with cp.async.cg, which goes to L2, where the other blocks' stores are. A block only waits for
// blocks of lower index, which the GPU starts first, so the wait always ends; the last down tile
// of a panel sets its counters back to zero for the next launch. Tiles are numbered in groups of
// AK_GROUP_M row panels for L2 reuse of the weights.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half and __nv_bfloat16.
// wgmma needs sm_90a (the H100's architecture as the harness compiles for it).
//
// bench: autokernel bench kernels_cuda/fused_mlp/variants/wgmma_pipeline.cu --kernel fused_mlp --dtype fp16
// measured: 2757.69 us median, spread 2.9% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 192  // rows per tile: 64 per warpgroup (64, 128, 192 or 256)
#define AK_TILE_N 128  // columns per tile (64, 128 or 256)
#define AK_STAGES 4    // slices of 64 along K in flight (3 or more)
#define AK_GROUP_M 8   // row panels numbered together, for L2 reuse of the weights

constexpr int kTileK = 64;                        // one 128-byte swizzle row of 16-bit elements
constexpr int kGroups = AK_TILE_M / 64;           // warpgroups
constexpr int kThreads = kGroups * 128;
constexpr int kInstrN = AK_TILE_N;                // columns one wgmma instruction covers
constexpr int kStageA = AK_TILE_M * kTileK * 2;   // bytes
constexpr int kStageB = kTileK * AK_TILE_N * 2;   // one weight slice
constexpr int kStage = kStageA + 2 * kStageB;     // x, and gate and up (down uses one)
constexpr int kSmem = kStage * AK_STAGES + 1024;  // + room to align the stages to 1024 bytes
static_assert(AK_TILE_M % 64 == 0 && AK_TILE_M >= 64 && AK_TILE_M <= 256, "64 rows per warpgroup, at most 4 warpgroups");
static_assert(AK_TILE_N == 64 || AK_TILE_N == 128 || AK_TILE_N == 256, "tiles of 64, 128 or 256 columns");
static_assert(AK_STAGES >= 3, "the pipeline needs 3 or more stages: one loading, one multiplied, one finishing");
static_assert(AK_GROUP_M >= 1, "group at least one row panel");
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have");
// Descriptor strides of the weights' N-major atoms (64 columns x 8 rows of K, 1024 bytes):
// between atoms along N, and between groups of 8 rows of K.
constexpr unsigned kAtomN = kTileK / 8 * 1024, kGroupK = 1024;
constexpr unsigned kLboB = kAtomN, kSboB = kGroupK;

// ---- launch geometry, read by the harness from the compiled module ----
// grid: ceil(M/tile_m)·ceil(I/tile_n) + ceil(M/tile_m)·ceil(K/tile_n) blocks
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = AK_TILE_M;
extern "C" __constant__ int ak_tile_n = AK_TILE_N;
extern "C" __constant__ int ak_smem_bytes = kSmem;

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void copy16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// A shared-memory matrix descriptor: start address, leading and stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long descriptor(const void* p, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((smem_addr(p) & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}

// The accumulator operands of wgmma m64nNk16 with fp32 accumulation: N/2 registers a thread.
#define WGMMA_ACC64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_OUT64 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define WGMMA_ACC128 \
  WGMMA_ACC64 \
  ",%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_OUT128 \
  WGMMA_OUT64, \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define WGMMA_ACC256 \
  WGMMA_ACC128 \
  ",%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WGMMA_OUT256 \
  WGMMA_OUT128, \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// c += a * b over 16 of K, a and b from shared memory (b N-major: transposed on the way in);
// the element type picks the instruction.
__device__ __forceinline__ void wgmma_n64(float (&d)[32], unsigned long long da, unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" WGMMA_ACC64
               "}, %32, %33, p, 1, 1, 0, 1;\n}\n" : WGMMA_OUT64 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n64(float (&d)[32], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" WGMMA_ACC64
               "}, %32, %33, p, 1, 1, 0, 1;\n}\n" : WGMMA_OUT64 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long da, unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" WGMMA_ACC128
               "}, %64, %65, p, 1, 1, 0, 1;\n}\n" : WGMMA_OUT128 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WGMMA_ACC128
               "}, %64, %65, p, 1, 1, 0, 1;\n}\n" : WGMMA_OUT128 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da, unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {" WGMMA_ACC256
               "}, %128, %129, p, 1, 1, 0, 1;\n}\n" : WGMMA_OUT256 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" WGMMA_ACC256
               "}, %128, %129, p, 1, 1, 0, 1;\n}\n" : WGMMA_OUT256 : "l"(da), "l"(db));
}

template <int N, typename T>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], unsigned long long da, unsigned long long db) {
  if constexpr (N == 64) wgmma_n64(d, da, db, T());
  else if constexpr (N == 128) wgmma_n128(d, da, db, T());
  else wgmma_n256(d, da, db, T());
}

__device__ __forceinline__ void store_pair(__half* p, float x, float y) { *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y); }
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x, float y) { *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y); }
__device__ __forceinline__ void store_one(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_one(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

// Byte offset of element (row, col) of a block of 128-byte rows in the 128-byte swizzle: the
// 16-byte chunk index XOR the row's index within its group of eight.
__device__ __forceinline__ int swizzled(int row, int col) {
  return row * 128 + ((((col >> 3) ^ row) & 7) << 4) + (col & 7) * 2;
}

// Copies a ROWS x 64 block of a row-major matrix (row stride ld, bounds R x C) at (r0, c0) into
// swizzled 128-byte rows, zeros past the edge; 16-byte cp.async chunks when ld allows, else
// element by element. `atom` is the byte distance between blocks of 64 columns (b's N atoms).
template <typename T>
__device__ __forceinline__ void load_block(unsigned char* s, int rows, int cols, int atom, const T* g, int ld, int r0,
                                           int c0, int R, int C) {
  if (ld % 8 == 0) {
    for (int i = threadIdx.x; i < rows * cols / 8; i += kThreads) {
      const int r = i / (cols / 8), c = (i % (cols / 8)) * 8;
      const int gr = r0 + r, gc = c0 + c;
      const bool in = gr < R && gc < C;   // C % 8 == 0 here: a chunk is whole or absent
      copy16(s + (c / 64) * atom + swizzled(r, c % 64), in ? g + (long long)gr * ld + gc : g, in ? 16 : 0);
    }
  } else {
    T zero;
    store_one(&zero, 0.f);
    for (int i = threadIdx.x; i < rows * cols; i += kThreads) {
      const int r = i / cols, c = i % cols;
      const int gr = r0 + r, gc = c0 + c;
      *reinterpret_cast<T*>(s + (c / 64) * atom + swizzled(r, c % 64)) =
          (gr < R && gc < C) ? g[(long long)gr * ld + gc] : zero;
    }
  }
}

// acc[b] += a[m0:, :depth] · bm[b][:depth, n0:] for NB weight matrices sharing each slice of a;
// a is [rows, depth], each bm[b] is [depth, cols], row-major.
template <typename T, int NB>
__device__ __forceinline__ void gemm_tile(unsigned char* smem, const T* a, const T* const (&bm)[NB], int rows, int cols,
                                          int depth, int m0, int n0, float (&acc)[NB][kInstrN / 2]) {
  const int wg = threadIdx.x / 128;
  const int k_tiles = (depth + kTileK - 1) / kTileK;
  auto load_slice = [&](int kt) {
    if (kt < k_tiles) {
      unsigned char* st = smem + (kt % AK_STAGES) * kStage;
      load_block<T>(st, AK_TILE_M, kTileK, 0, a, depth, m0, kt * kTileK, rows, depth);
#pragma unroll
      for (int b = 0; b < NB; ++b)
        load_block<T>(st + kStageA + b * kStageB, kTileK, AK_TILE_N, kAtomN, bm[b], cols, kt * kTileK, n0, depth, cols);
    }
    commit_copies();
  };
  // One wgmma batch stays in flight while the next is issued, so the slice loaded at step kt goes
  // to the stage of slice kt - 2, which every warpgroup has finished by the barrier of step kt.
  for (int kt = 0; kt < AK_STAGES - 2; ++kt) load_slice(kt);
  for (int kt = 0; kt < k_tiles; ++kt) {
    wait_copies<AK_STAGES - 3>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's copies, seen by wgmma
    __syncthreads();
    load_slice(kt + AK_STAGES - 2);
    const unsigned char* st = smem + (kt % AK_STAGES) * kStage;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < kTileK / 16; ++kk) {
      const unsigned long long da = descriptor(st + wg * 64 * 128 + kk * 32, 16, 1024);
#pragma unroll
      for (int b = 0; b < NB; ++b)
        wgmma<kInstrN, T>(acc[b], da, descriptor(st + kStageA + b * kStageB + kk * 2 * kGroupK, kLboB, kSboB));
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  wait_copies<0>();
  __syncthreads();   // the stages are free for whatever this block does next
}

// Calls f(row, col, j, e) for the accumulator elements (e, e + 1) this lane holds inside rows x cols:
// per 8 columns j, rows lane/4 and lane/4 + 8 of its warp's 16, columns 2 * (lane % 4) and the next.
template <typename F>
__device__ __forceinline__ void for_each_pair(int m0, int n0, int rows, int cols, F f) {
  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < kInstrN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + wg * 64 + warp * 16 + lane / 4 + h * 8;
      const int col = n0 + j * 8 + (lane % 4) * 2;
      if (row < rows && col < cols) f(row, col, 4 * j + 2 * h);
    }
}

template <typename T>
__device__ __forceinline__ void store2(T* p, float x, float y, bool pair, bool second) {
  if (pair) store_pair(p, x, y);
  else {
    store_one(p, x);
    if (second) store_one(p + 1, y);
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
__global__ void __launch_bounds__(kThreads)
fused_mlp_kernel(const T* __restrict__ x, const T* __restrict__ w_gate, const T* __restrict__ w_up,
                 const T* __restrict__ w_down, T* __restrict__ out, float* __restrict__ hidden,
                 unsigned int* counters, int M, int K, int I) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);   // swizzle atoms are 1024-aligned
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
    float acc[2][kInstrN / 2] = {};
    const T* const b[2] = {w_gate, w_up};
    gemm_tile<T, 2>(smem, x, b, M, I, K, m0, n0, acc);
    for_each_pair(m0, n0, M, I, [&](int row, int c, int e) {
      const float g0 = acc[0][e], g1 = acc[0][e + 1];
      const float y0 = g0 / (1.f + expf(-g0)) * acc[1][e], y1 = g1 / (1.f + expf(-g1)) * acc[1][e + 1];
      store2(h + (long long)row * I + c, y0, y1, I % 2 == 0, c + 1 < I);
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
  float acc[1][kInstrN / 2] = {};
  const T* const b[1] = {w_down};
  gemm_tile<T, 1>(smem, h, b, M, K, I, m0, n0, acc);
  for_each_pair(m0, n0, M, K, [&](int row, int c, int e) {
    store2(out + (long long)row * K + c, acc[0][e], acc[0][e + 1], K % 2 == 0, c + 1 < K);
  });
  if (threadIdx.x == 0 && atomicAdd(&done[panel], 1u) == (unsigned)out_tiles - 1) {
    ready[panel] = 0;  // every block of this panel is past its wait: reset for the next launch
    done[panel] = 0;
  }
}
