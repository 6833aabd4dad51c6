// fused_mlp variant tma_swiglu: both phases on matmul's tma_warp_specialized core (TMA, mbarrier stages, a producer warpgroup and two consumers, persistent), gate and up side by side in one stage
//
// What it changes and why: the wgmma_pipeline variant copies with cp.async from every thread and
// meets at a block-wide barrier once per slice of K, so the tensor cores wait for the slowest
// copying warp, and each of its blocks runs one tile and exits. Here the roles are split as in
// matmul's tma_warp_specialized variant. Warpgroup 0 is the producer: it gives registers away
// (setmaxnreg) and one thread asks the Tensor Memory Accelerator for each slice of 64 along the
// reduction, into AK_STAGES stages in the 128-byte swizzle, each with a "full" mbarrier (the copy
// engine counts the bytes in) and an "empty" one (the consumers free it). Warpgroups 1 and 2 are
// the consumers, 64 rows of a 128-row tile each. The grid is persistent and walks every gate/up
// tile first, then every down tile, each phase numbered in groups of AK_GROUP_M row panels so
// that the tiles running at once share weights in L2.
// - A gate/up tile (128 rows x 128 columns of I): a stage holds x's box and, beside it, the
//   w_gate and w_up boxes of the same columns; a consumer keeps two m64n128 accumulators (g and u
//   of the same columns in the same registers' places), writes silu(g)*u in T to the scratch
//   buffer (rows of I), then publishes it: a proxy fence (the tile is read back by the copy
//   engine, another proxy, in other blocks) and a release increment of the panel's counter.
// - A down tile (128 rows x AK_DOWN_N columns of K): the producer waits, acquiring and sleeping,
//   until its panel's counter says that every gate/up tile of the panel is written (two
//   consumers a tile), then loads hidden through a tensor map over the scratch and w_down; the
//   consumers store out. Every block is resident (a persistent grid) and walks its tiles in
//   increasing order, gate/up before down, so the wait always ends. The down tiles of a panel
//   count themselves in the panel's second counter; the last one sets both back to zero.
// - Where the harness could not build a map (rows of K or I that are not a multiple of 16 bytes),
//   the producer warpgroup fills that operand's part of the stage itself, in the same swizzled
//   layout, with cp.async (or element by element), zeros past the edges, and then arrives on the
//   full barrier; reads of hidden bypass L1, where another SM's stores are not seen.
// Not yet: an epilogue through shared memory and a TMA store, ping-pong consumers.
//
// The kernel-file contract (docs/kernel-contract.md, with tensor maps and persistent grids):
// device code and launch knobs only, no host code; the entry point and its arguments are fixed,
// plus the trailing tensor-map parameter; the harness reads the launch geometry from the ak_*
// constants below and instantiates the template for __half and __nv_bfloat16. wgmma, setmaxnreg
// and TMA need sm_90a (the H100's architecture as the harness compiles for it).
//
// bench: autokernel bench kernels_cuda/fused_mlp/variants/tma_swiglu.cu --kernel fused_mlp --dtype fp16
// measured: 1546.47 us median, spread 3.5% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_DOWN_N 256  // columns of out per down tile (128 or 256); gate/up tiles are 128 columns of I
#define AK_STAGES 4    // slices of 64 along the reduction in flight (2, 3 or 4)
#define AK_GROUP_M 8   // row panels numbered together, for L2 reuse of the weights

constexpr int kTileM = 128;                      // two consumer warpgroups of 64 rows
constexpr int kTileK = 64;                       // one 128-byte swizzle row of 16-bit elements
constexpr int kHiddenN = 128;                    // columns of gate (and of up) per gate/up tile
constexpr int kThreads = 384;                    // producer warpgroup + two consumers
constexpr int kAtom = kTileK * 64 * 2;           // one N-major atom: 64 rows of K x 64 columns, one TMA box
constexpr int kStageA = kTileM * kTileK * 2;     // x's or hidden's box
constexpr int kStageB = 4 * kAtom;               // gate's 2 atoms then up's 2, or down's AK_DOWN_N / 64
constexpr int kStage = kStageA + kStageB;
constexpr int kBarriers = 2 * AK_STAGES * 8;     // full and empty mbarriers
constexpr int kSmem = kStage * AK_STAGES + kBarriers + 1024;   // + room to align the stages to 1024 bytes
constexpr int kProducerRegs = 56;                // setmaxnreg: the producer gives registers away
constexpr int kConsumerRegs = 224;               // and the consumers take them (168 a thread at launch)
static_assert(AK_DOWN_N == 128 || AK_DOWN_N == 256, "down tiles of 128 or 256 columns (one wgmma instruction each)");
static_assert(AK_STAGES >= 2 && AK_STAGES <= 4, "2 to 4 stages of 48 KiB");
static_assert(AK_GROUP_M >= 1, "group at least one row panel");
static_assert(AK_DOWN_N / 64 * kAtom <= kStageB, "down's atoms fit where gate and up go");
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have");
// The block starts with 168 registers a thread (65536 / 384, rounded down to a multiple of 8);
// setmaxnreg only moves them between warpgroups.
static_assert(kProducerRegs * 128 + 2 * kConsumerRegs * 128 <= 168 * kThreads, "setmaxnreg asks for more registers than the block has");
static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0 && kProducerRegs >= 24 && kConsumerRegs <= 256, "setmaxnreg counts are multiples of 8 in 24..256");
constexpr unsigned kGroupK = 1024;               // between groups of 8 rows of K in an atom

// ---- launch geometry, read by the harness from the compiled module ----
// grid rule: ceil(M/tile_m)·ceil(I/tile_n) + ceil(M/tile_m)·ceil(K/tile_n) tiles, capped by what
// the GPU holds; the kernel walks its own tiles (the down tiles are AK_DOWN_N wide).
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = kTileM;
extern "C" __constant__ int ak_tile_n = kHiddenN;
extern "C" __constant__ int ak_smem_bytes = kSmem;
extern "C" __constant__ int ak_persistent = 1;
enum { kMapX, kMapGate, kMapUp, kMapDown, kMapHidden };
// operand, box_cols, box_rows, swizzle_bytes, l2_promotion_bytes
extern "C" __constant__ int ak_tensor_maps[5][5] = {
    {0, kTileK, kTileM, 128, 256},   // x: 128 rows x 64 columns of K
    {1, 64, kTileK, 128, 256},       // w_gate: 64 rows of K x 64 columns of I, one atom
    {2, 64, kTileK, 128, 256},       // w_up: the same
    {3, 64, kTileK, 128, 256},       // w_down: 64 rows of I x 64 columns of K
    {5, kTileK, kTileM, 128, 256},   // hidden (the scratch, as T with rows of I): 128 rows x 64 columns
};

struct alignas(64) ak_tensor_map { unsigned long long opaque[16]; };
struct ak_tensor_map_args { ak_tensor_map map[8]; unsigned int built; };

// ---- shared memory, mbarriers, TMA, global flags ----
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_arrive_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool bar_try_wait(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  return done != 0;
}
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
  while (!bar_try_wait(bar, parity)) {
  }
}

// One box of a tensor map into this block's shared memory, counted on `bar`.
__device__ __forceinline__ void tma_load(unsigned dst, const ak_tensor_map* map, int col, int row, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
               ::"r"(dst), "l"(map), "r"(col), "r"(row), "r"(bar) : "memory");
}
__device__ __forceinline__ void copy16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
// Generic-proxy writes to global memory ordered before later async-proxy (TMA) accesses.
__device__ __forceinline__ void fence_proxy_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }
__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void add_release(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// A shared-memory matrix descriptor: start address, leading and stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long descriptor(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}

// ---- wgmma m64nNk16, fp32 accumulators: N/2 registers a thread ----
#define AK_ACC_64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define AK_ACC_128 \
  AK_ACC_64 \
  ",%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define AK_ACC_256 \
  AK_ACC_128 \
  ",%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define AK_OUT_8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define AK_OUT_64 AK_OUT_8(0), AK_OUT_8(8), AK_OUT_8(16), AK_OUT_8(24), AK_OUT_8(32), AK_OUT_8(40), AK_OUT_8(48), AK_OUT_8(56)
#define AK_OUT_128 AK_OUT_64, AK_OUT_8(64), AK_OUT_8(72), AK_OUT_8(80), AK_OUT_8(88), AK_OUT_8(96), AK_OUT_8(104), AK_OUT_8(112), AK_OUT_8(120)
// b is N-major in shared memory: the instruction's transpose-b flag (the last 1) reads it as K x N.
#define AK_WGMMA(shape, type, acc, outs, da_idx, db_idx)                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned." shape ".f32." type "." type \
               " {" acc "}, %" da_idx ", %" db_idx ", p, 1, 1, 0, 1;\n}\n"                                      \
               : outs : "l"(da), "l"(db))

__device__ __forceinline__ void wgmma(float (&d)[64], unsigned long long da, unsigned long long db, __half) {
  AK_WGMMA("m64n128k16", "f16", AK_ACC_128, AK_OUT_64, "64", "65");
}
__device__ __forceinline__ void wgmma(float (&d)[64], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  AK_WGMMA("m64n128k16", "bf16", AK_ACC_128, AK_OUT_64, "64", "65");
}
__device__ __forceinline__ void wgmma(float (&d)[128], unsigned long long da, unsigned long long db, __half) {
  AK_WGMMA("m64n256k16", "f16", AK_ACC_256, AK_OUT_128, "128", "129");
}
__device__ __forceinline__ void wgmma(float (&d)[128], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  AK_WGMMA("m64n256k16", "bf16", AK_ACC_256, AK_OUT_128, "128", "129");
}

__device__ __forceinline__ void store_pair(__half* p, float x, float y) { *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y); }
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x, float y) { *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y); }
__device__ __forceinline__ void store_one(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_one(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

// silu(g) * u with the fast exponential and division: for a large -g the denominator is past
// 2^126 (or infinite) and the quotient 0, so silu goes to 0, not NaN.
__device__ __forceinline__ float swiglu(float g, float u) { return __fdividef(g, 1.f + __expf(-g)) * u; }

// Byte offset of element (row, col) of a block of 128-byte rows in the 128-byte swizzle (what
// TMA writes with CU_TENSOR_MAP_SWIZZLE_128B into a 1024-aligned box).
__device__ __forceinline__ int swizzled(int row, int col) {
  return row * 128 + ((((col >> 3) ^ row) & 7) << 4) + (col & 7) * 2;
}

// The producer warpgroup's own copy of a ROWS x COLS block of a row-major matrix (row stride ld,
// bounds R x C) at (r0, c0) into the swizzled stage layout, zeros past the edge: 16-byte
// cp.async chunks where the rows allow, else element by element, both through L2 only (hidden
// is written by other SMs in this launch). `atom` is the byte distance between blocks of 64
// columns. Used only where the tensor map was not built.
template <typename T, int rows, int cols, int atom>
__device__ __forceinline__ void fill_block(unsigned char* s, const T* g, int ld, int r0, int c0, int R, int C, int t) {
  if (ld % 8 == 0 && (reinterpret_cast<unsigned long long>(g) & 15) == 0) {
#pragma unroll 1
    for (int i = t; i < rows * cols / 8; i += 128) {
      const int r = i / (cols / 8), col = (i % (cols / 8)) * 8;
      const int gr = r0 + r, gc = c0 + col;
      const bool in = gr < R && gc < C;   // C % 8 == 0 here: a chunk is whole or absent
      copy16(smem_addr(s + (col / 64) * atom + swizzled(r, col % 64)), in ? g + (long long)gr * ld + gc : g, in ? 16 : 0);
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
  } else {
    const unsigned short* bits = reinterpret_cast<const unsigned short*>(g);
#pragma unroll 1
    for (int i = t; i < rows * cols; i += 128) {
      const int r = i / cols, col = i % cols;
      const int gr = r0 + r, gc = c0 + col;
      *reinterpret_cast<unsigned short*>(s + (col / 64) * atom + swizzled(r, col % 64)) =
          (gr < R && gc < C) ? __ldcg(bits + (long long)gr * ld + gc) : (unsigned short)0;
    }
  }
}

// The tiles of one launch: every gate/up tile (panels x hidden_cols), then every down tile
// (panels x down_cols), each phase in groups of AK_GROUP_M panels walked column by column.
struct Schedule {
  int panels, hidden_cols, down_cols, first_down, count;
  __device__ Schedule(int M, int K, int I) {
    panels = (M + kTileM - 1) / kTileM;
    hidden_cols = (I + kHiddenN - 1) / kHiddenN;
    down_cols = (K + AK_DOWN_N - 1) / AK_DOWN_N;
    first_down = panels * hidden_cols;
    count = first_down + panels * down_cols;
  }
  // Tile u: whether it is a gate/up tile, its row panel and its first column.
  __device__ bool tile(int u, int& panel, int& n0) const {
    const bool gate_up = u < first_down;
    const int t = gate_up ? u : u - first_down, cols = gate_up ? hidden_cols : down_cols;
    const int group = t / (AK_GROUP_M * cols);
    const int in_group = t % (AK_GROUP_M * cols);
    const int rows_in_group = min(AK_GROUP_M, panels - group * AK_GROUP_M);
    panel = group * AK_GROUP_M + in_group % rows_in_group;
    n0 = (in_group / rows_in_group) * (gate_up ? kHiddenN : AK_DOWN_N);
    return gate_up;
  }
};

template <typename T>
__device__ __forceinline__ void produce(unsigned char* smem, unsigned full0, unsigned empty0, const T* x, const T* w_gate,
                                        const T* w_up, const T* w_down, const T* h, const unsigned* ready, int M, int K,
                                        int I, const ak_tensor_map_args& maps) {
  const unsigned built = maps.built;
  const bool tma_x = built >> kMapX & 1u, tma_g = built >> kMapGate & 1u, tma_u = built >> kMapUp & 1u;
  const bool tma_d = built >> kMapDown & 1u, tma_h = built >> kMapHidden & 1u;
  const bool all_tma = tma_x && tma_g && tma_u && tma_d && tma_h;
  const int t = threadIdx.x;   // 0..127
  // With every map built one thread does all the work; otherwise the warpgroup copies together.
  if (all_tma && t != 0) return;
  if (t == 0)
    for (int i = kMapX; i <= kMapHidden; ++i)
      if (built >> i & 1u) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[i]) : "memory");
  const Schedule sc(M, K, I);
  unsigned it = 0;   // slices produced so far, across tiles: stage it % AK_STAGES, phase it / AK_STAGES
  for (int u = blockIdx.x; u < sc.count; u += gridDim.x) {
    int panel, n0;
    const bool gate_up = sc.tile(u, panel, n0);
    const int m0 = panel * kTileM;
    if (!gate_up) {
      // Every gate/up tile of the panel written (two consumer warpgroups each) and published.
      const unsigned* flag = ready + panel;
      while (load_acquire(flag) < 2u * sc.hidden_cols) __nanosleep(128);
      fence_proxy_global();   // hidden, written through the generic proxy, is next read by the copy engine
    }
    const int depth = gate_up ? K : I;
    const int k_tiles = (depth + kTileK - 1) / kTileK;
    // Atoms wholly past the last column are not loaded: what the stage holds there reaches only
    // columns that are never stored.
    const int atoms = gate_up ? min(kHiddenN / 64, (I - n0 + 63) / 64) : min(AK_DOWN_N / 64, (K - n0 + 63) / 64);
    const bool tma_a = gate_up ? tma_x : tma_h;
    const unsigned tx = (tma_a ? kStageA : 0) +
                        (gate_up ? ((tma_g ? atoms * kAtom : 0) + (tma_u ? atoms * kAtom : 0)) : (tma_d ? atoms * kAtom : 0));
#pragma unroll 1
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const unsigned s = it % AK_STAGES;
      const unsigned full = full0 + 8 * s, empty = empty0 + 8 * s;
      if (it >= AK_STAGES) bar_wait(empty, (it / AK_STAGES - 1) & 1);   // both consumers done with it
      unsigned char* st = smem + s * kStage;
      unsigned char* sb = st + kStageA;
      const int k0 = kt * kTileK;
      if (!all_tma) {
        if (gate_up) {
          if (!tma_x) fill_block<T, kTileM, kTileK, 0>(st, x, K, m0, k0, M, K, t);
          if (!tma_g) fill_block<T, kTileK, kHiddenN, kAtom>(sb, w_gate, I, k0, n0, K, I, t);
          if (!tma_u) fill_block<T, kTileK, kHiddenN, kAtom>(sb + 2 * kAtom, w_up, I, k0, n0, K, I, t);
        } else {
          if (!tma_h) fill_block<T, kTileM, kTileK, 0>(st, h, I, m0, k0, M, I, t);
          if (!tma_d) fill_block<T, kTileK, AK_DOWN_N, kAtom>(sb, w_down, K, k0, n0, I, K, t);
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's writes, seen by wgmma
        asm volatile("bar.sync 1, 128;\n" ::: "memory");                 // the whole warpgroup's
      }
      if (t == 0) {
        if (tx) bar_arrive_tx(full, tx);
        else bar_arrive(full);
        if (gate_up) {
          if (tma_x) tma_load(smem_addr(st), &maps.map[kMapX], k0, m0, full);
          for (int a = 0; a < atoms; ++a) {
            if (tma_g) tma_load(smem_addr(sb + a * kAtom), &maps.map[kMapGate], n0 + a * 64, k0, full);
            if (tma_u) tma_load(smem_addr(sb + (2 + a) * kAtom), &maps.map[kMapUp], n0 + a * 64, k0, full);
          }
        } else {
          if (tma_h) tma_load(smem_addr(st), &maps.map[kMapHidden], k0, m0, full);
          if (tma_d)
            for (int a = 0; a < atoms; ++a) tma_load(smem_addr(sb + a * kAtom), &maps.map[kMapDown], n0 + a * 64, k0, full);
        }
      }
    }
  }
}

// acc[b] += this warpgroup's 64 rows of the A box times B operand b, over k_tiles slices; B
// operand b starts b_step bytes after the previous one. One batch of wgmmas stays in flight; a
// stage is freed as soon as the batch that read it is complete.
template <typename T, int NB, int R>
__device__ __forceinline__ void mainloop(float (&acc)[NB][R], unsigned base, unsigned full0, unsigned empty0, unsigned& it,
                                         int k_tiles, unsigned b_step, int wg, bool signals) {
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int e = 0; e < R; ++e) acc[b][e] = 0.f;
#pragma unroll 1
  for (int kt = 0; kt < k_tiles; ++kt, ++it) {
    const unsigned s = it % AK_STAGES;
    bar_wait(full0 + 8 * s, (it / AK_STAGES) & 1);
    const unsigned st = base + s * kStage;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < kTileK / 16; ++kk) {
      const unsigned long long da = descriptor(st + wg * 64 * 128 + kk * 32, 16, 1024);
#pragma unroll
      for (int b = 0; b < NB; ++b) wgmma(acc[b], da, descriptor(st + kStageA + b * b_step + kk * 2 * kGroupK, kAtom, kGroupK), T());
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    if (kt > 0 && signals) bar_arrive(empty0 + 8 * ((it - 1) % AK_STAGES));
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  if (k_tiles > 0 && signals) bar_arrive(empty0 + 8 * ((it - 1) % AK_STAGES));
}

// Calls f(row, col, e) for the accumulator pairs (e, e + 1) this lane holds inside rows x cols.
// Each warp of a warpgroup holds 16 rows; per 8 columns, a lane has rows lane/4 and lane/4 + 8,
// columns 2 * (lane % 4) and the next.
template <int N, typename F>
__device__ __forceinline__ void for_each_pair(int m0, int n0, int rows, int cols, int wg, F f) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int row = m0 + wg * 64 + warp * 16 + lane / 4 + hf * 8;
      const int col = n0 + j * 8 + (lane % 4) * 2;
      if (row < rows && col < cols) f(row, col, 4 * j + 2 * hf);
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

template <typename T>
__device__ __forceinline__ void consume(unsigned char* smem, unsigned full0, unsigned empty0, T* h, T* out,
                                        unsigned* counters, int M, int K, int I) {
  const int wg = threadIdx.x / 128 - 1;   // 0 or 1: which 64 rows of the tile
  const bool signals = threadIdx.x % 128 == 0;
  unsigned* ready = counters;      // per panel: gate/up tiles written, two consumer warpgroups each
  unsigned* done = counters + M;   // per panel: down tiles finished, two consumer warpgroups each
  const Schedule sc(M, K, I);
  const unsigned base = smem_addr(smem);
  unsigned it = 0;
  for (int u = blockIdx.x; u < sc.count; u += gridDim.x) {
    int panel, n0;
    const bool gate_up = sc.tile(u, panel, n0);
    const int m0 = panel * kTileM;
    if (gate_up) {
      float acc[2][kHiddenN / 2];   // g and u of the same columns, in the same places
      mainloop<T, 2, kHiddenN / 2>(acc, base, full0, empty0, it, (K + kTileK - 1) / kTileK, 2 * kAtom, wg, signals);
      for_each_pair<kHiddenN>(m0, n0, M, I, wg, [&](int row, int col, int e) {
        store2(h + (long long)row * I + col, swiglu(acc[0][e], acc[1][e]), swiglu(acc[0][e + 1], acc[1][e + 1]), I % 2 == 0,
               col + 1 < I);
      });
      // Publish: this thread's stores ordered before the copy engine's reads, the warpgroup's
      // stores before its leader's release.
      fence_proxy_global();
      if (wg == 0) asm volatile("bar.sync 2, 128;\n" ::: "memory");   // named barriers 2 and 3: one per consumer
      else asm volatile("bar.sync 3, 128;\n" ::: "memory");
      if (signals) add_release(ready + panel, 1u);
    } else {
      float acc[1][AK_DOWN_N / 2];
      mainloop<T, 1, AK_DOWN_N / 2>(acc, base, full0, empty0, it, (I + kTileK - 1) / kTileK, 0, wg, signals);
      for_each_pair<AK_DOWN_N>(m0, n0, M, K, wg, [&](int row, int col, int e) {
        store2(out + (long long)row * K + col, acc[0][e], acc[0][e + 1], K % 2 == 0, col + 1 < K);
      });
      // This tile's producer is past its wait (the stages it filled were consumed): when every
      // down tile of the panel says so, nobody reads the panel's counters again in this launch.
      if (signals && atomicAdd(done + panel, 1u) == 2u * sc.down_cols - 1) {
        ready[panel] = 0;
        done[panel] = 0;
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
fused_mlp_kernel(const T* __restrict__ x, const T* __restrict__ w_gate, const T* __restrict__ w_up,
                 const T* __restrict__ w_down, T* __restrict__ out, float* hidden, unsigned int* counters, int M, int K,
                 int I, const __grid_constant__ ak_tensor_map_args maps) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);   // swizzle atoms are 1024-aligned
  const unsigned full0 = smem_addr(smem + AK_STAGES * kStage), empty0 = full0 + 8 * AK_STAGES;
  T* h = reinterpret_cast<T*>(hidden);   // the hidden activations, [M, I] in T

  if (threadIdx.x == 0) {
    for (int s = 0; s < AK_STAGES; ++s) {
      bar_init(full0 + 8 * s, 1);    // the producer's arrival (+ the copy engine's bytes)
      bar_init(empty0 + 8 * s, 2);   // one per consumer warpgroup
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (threadIdx.x < 128) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    produce<T>(smem, full0, empty0, x, w_gate, w_up, w_down, h, counters, M, K, I, maps);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    consume<T>(smem, full0, empty0, h, out, counters, M, K, I);
  }
}
