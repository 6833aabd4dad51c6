// matmul variant tma_pingpong: a persistent TMA + wgmma kernel whose two consumer warpgroups take turns on different tiles (ping-pong), one multiplying while the other stores; optionally stream-K over the last, partial wave
//
// What it changes and why: in tma_warp_specialized both consumer warpgroups share one 128-row
// tile, so they finish their wgmmas together and store together, and the tensor cores idle
// through every epilogue (the ncu profile: tensor pipe busy 88.6%, both epilogues coinciding).
// Here each consumer warpgroup owns a whole tile (AK_TILE_M x AK_TILE_N, one or two m64 wgmmas per
// 16 of K) and the block's tiles go to the two in turn: tile j of the block to warpgroup j % 2.
// The producer warpgroup (one TMA thread, registers given away with setmaxnreg) loads the slices
// of 64 along K of tile 0, then of tile 1, and so on, through one ring of AK_STAGES stages, each
// with a "full" mbarrier (the copy engine counts the bytes in) and an "empty" one (the consumer
// that read it frees it). The turns are kept by two named barriers: a warpgroup issues a tile's
// wgmmas only after the other has issued all of its previous tile's (bar.sync on its own
// barrier, which the other bar.arrives on), so the tensor cores run one tile after another while
// the warpgroup that just finished adds the bias and stores its tile (through shared memory and
// TMA stores, as tma_warp_specialized's AK_EPILOGUE 1 does, or directly where y has no map). The
// turns also keep the slice ring's parity waits sound: a warpgroup waits for a stage's phase only
// once the phase before it has completed, because the other warpgroup has already waited for it.
// With AK_STREAM_K 1, the tiles of the last, partial wave are not given whole to some blocks
// while the others idle: their slices along K are split evenly over all the blocks (stream-K).
// Each piece's partial sums go to the contract's fp32 workspace; the piece that brings a tile's
// count (its counter in tile_counters) to the number of its pieces adds them all, in the order of
// K whatever order they arrived in (the result is the same bits on every run), stores the tile,
// and sets the counter back to zero. No piece waits for another, so no block can stall one that
// has not started. Stream-K is used only where every block gets at least 2 slices, there is at
// least one full wave, and the workspace holds two tiles per block; otherwise the tiles run whole.
// Where the harness could not build a tensor map (rows whose length is not a multiple of 16 bytes,
// an unaligned base), the producer warpgroup fills the same swizzled stages itself with cp.async
// (or element by element), zeros past the edges, so one structure serves every shape. fp32 runs
// CUDA-core FMAs along K in order over the same tiles (the reference's result to the bit; the
// starter says why no tensor-core fp32 can pass).
// Not yet: clusters with TMA multicast (tma_warp_specialized has them).
//
// workspace (fp32, shaped as y, undefined at every launch) holds the stream-K pieces' partial
// sums; tile_counters (zero at every launch, to be left zero) counts a stream-K tile's pieces, one
// counter per tile (that of its first 64 x 64 block). Both unused with AK_STREAM_K 0 and in fp32.
//
// The kernel-file contract (docs/kernel-contract.md, with tensor maps and persistent grids):
// device code and launch knobs only, no host code; the entry point and its arguments are fixed,
// plus the trailing tensor-map parameter; the harness reads the launch geometry from the ak_*
// constants below and instantiates the template for __half, __nv_bfloat16 and float. wgmma,
// setmaxnreg and TMA need sm_90a (the H100's architecture as the harness compiles for it).
//
// bench: autokernel bench kernels_cuda/matmul/variants/tma_pingpong.cu --kernel matmul --dtype fp16
// measured: 233.53 us median, spread 0.6% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 128  // rows of a consumer warpgroup's tile (64 or 128: one or two m64 wgmmas)
#define AK_TILE_N 128  // columns of a tile (128 or 256; AK_TILE_M * AK_TILE_N at most 128 * 128: the accumulators)
#define AK_STAGES 5    // slices of 64 along K in flight (2 or more; the shared memory bounds them)
#define AK_GROUP_M 8   // tile rows numbered together, for L2 reuse
#define AK_STREAM_K 0  // 1: the last, partial wave's tiles split along K over every block (stream-K)

constexpr int kTileK = 64;                           // one 128-byte swizzle row of 16-bit elements
constexpr int kThreads = 384;                        // producer warpgroup + two consumers
constexpr int kFragsM = AK_TILE_M / 64;              // m64 wgmmas per 16 of K
constexpr int kAcc = AK_TILE_N / 2;                  // accumulators a thread per m64 wgmma
constexpr int kAtomsB = AK_TILE_N / 64;              // w's boxes of 64 rows (of N) per stage
constexpr int kStageA = AK_TILE_M * kTileK * 2;      // bytes
constexpr int kStageB = kTileK * AK_TILE_N * 2;
constexpr int kStage = kStageA + kStageB;
constexpr int kBoxesC = AK_TILE_N / 64;              // TMA store boxes of 64 rows x 64 columns per 64 rows of a tile
constexpr int kBoxC = 64 * 64 * 2;                   // bytes of one box, one 128-byte swizzle row per row of y
constexpr int kStoreBuffers = 2;                     // box buffers per consumer warpgroup, filled in turn
constexpr int kStaging = 2 * kStoreBuffers * kBoxC;  // the box buffers of both consumer warpgroups
constexpr int kBarriers = 2 * AK_STAGES * 8;         // full and empty mbarriers
constexpr int kSlotFloats = AK_TILE_M * AK_TILE_N;      // stream-K: one piece's partial sums in the workspace
constexpr int kFlags = 16;                           // a word per consumer warpgroup: "this piece completes its tile"
constexpr int kSmem = kStage * AK_STAGES + kStaging + kBarriers + kFlags + 1024;   // + room to align the stages to 1024 bytes
constexpr int kProducerRegs = 56;                    // setmaxnreg: the producer gives registers away
constexpr int kConsumerRegs = 224;                   // and the consumers take them (168 a thread at launch)
constexpr int kTurnBarrier = 4;                      // named barriers 4 and 5: "warpgroup 0 / 1 may issue" (1: producer fill; 2, 3: epilogues)
static_assert(AK_TILE_M == 64 || AK_TILE_M == 128, "a consumer warpgroup's tile has 64 or 128 rows");
static_assert(AK_TILE_N == 128 || AK_TILE_N == 256, "tiles of 128 or 256 columns (one wgmma instruction each)");
static_assert(AK_TILE_M * AK_TILE_N <= 128 * 128, "at most 128 accumulators a thread (64 x 256 or 128 x 128)");
static_assert(AK_STAGES >= 2, "the pipeline needs 2 or more stages");
static_assert(AK_GROUP_M >= 1, "group at least one tile row");
static_assert(AK_STREAM_K == 0 || AK_STREAM_K == 1, "AK_STREAM_K is 0 (whole tiles) or 1 (stream-K over the last wave)");
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have (the stages plus 32 KB of store buffers)");
// The block starts with 168 registers a thread (65536 / 384, rounded down to a multiple of 8);
// setmaxnreg only moves them between warpgroups, and a consumer asking for more than the pool
// holds would wait forever.
static_assert(kProducerRegs * 128 + 2 * kConsumerRegs * 128 <= 168 * kThreads, "setmaxnreg asks for more registers than the block has");
static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0 && kProducerRegs >= 24 && kConsumerRegs <= 256, "setmaxnreg counts are multiples of 8 in 24..256");
// Bytes of one box of w: 64 rows of N, one 128-byte swizzle row (64 of K) each.
constexpr unsigned kAtomN = 64 * 128;

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = AK_TILE_M;
extern "C" __constant__ int ak_tile_n = AK_TILE_N;
extern "C" __constant__ int ak_smem_bytes = kSmem;
extern "C" __constant__ int ak_persistent = 1;
// operand, box_cols, box_rows, swizzle_bytes, l2_promotion_bytes
extern "C" __constant__ int ak_tensor_maps[3][5] = {
    {0, kTileK, AK_TILE_M, 128, 256},   // x: a tile's rows x 64 columns of K
    {1, kTileK, 64, 128, 256},          // w: 64 rows of N x 64 columns of K
    {3, 64, 64, 128, 0},                // y: 64 rows x 64 columns, one staging box
};

struct alignas(64) ak_tensor_map { unsigned long long opaque[16]; };
struct ak_tensor_map_args { ak_tensor_map map[8]; unsigned int built; };

// ---- shared memory, mbarriers, TMA ----
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
// One staged box of y out to global memory; the copy engine clips rows and columns past y's edge.
__device__ __forceinline__ void tma_store(const ak_tensor_map* map, int col, int row, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(map), "r"(col), "r"(row), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// All but this thread's `pending` latest bulk store groups have read their shared memory (they may still be writing y).
template <int pending>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(pending) : "memory"); }
// ... and written c: before the block exits, its shared memory must no longer be a source.
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Four 8 x 8 matrices of 16-bit elements, row addresses from lanes 8i..8i+7 for matrix i, and
// from each lane one register per matrix: the accumulator fragment's own layout.
__device__ __forceinline__ void stmatrix4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
               ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

__device__ __forceinline__ void copy16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
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
// a and b are both K-major in shared memory: no transpose (the last two flags 0).
#define AK_WGMMA(shape, type, acc, outs, da_idx, db_idx)                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned." shape ".f32." type "." type \
               " {" acc "}, %" da_idx ", %" db_idx ", p, 1, 1, 0, 0;\n}\n"                                      \
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
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ unsigned pack_pair(float x, float y, __half) {
  const __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&h);
}
__device__ __forceinline__ unsigned pack_pair(float x, float y, __nv_bfloat16) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&h);
}

// Byte offset of element (row, col) of a block of 128-byte rows in the 128-byte swizzle (what
// TMA writes with CU_TENSOR_MAP_SWIZZLE_128B into a 1024-aligned box): the 16-byte chunk index
// XOR the row's index within its group of eight.
__device__ __forceinline__ int swizzled(int row, int col) {
  return row * 128 + ((((col >> 3) ^ row) & 7) << 4) + (col & 7) * 2;
}

// The producer warpgroup's own copy of a rows x cols block (cols = 64, one swizzle row) of a
// row-major matrix (row stride ld, bounds R x C) at (r0, c0) into the swizzled stage layout,
// zeros past the edge: 16-byte cp.async chunks where the rows allow, else element by element.
// Used only where the tensor map was not built.
template <typename T, int rows, int cols>
__device__ __forceinline__ void fill_block(unsigned char* s, const T* g, int ld, int r0, int c0, int R, int C, int t) {
  if (ld % 8 == 0 && (reinterpret_cast<unsigned long long>(g) & 15) == 0) {
#pragma unroll 1
    for (int i = t; i < rows * cols / 8; i += 128) {
      const int r = i / (cols / 8), col = (i % (cols / 8)) * 8;
      const int gr = r0 + r, gc = c0 + col;
      const bool in = gr < R && gc < C;   // C % 8 == 0 here: a chunk is whole or absent
      copy16(smem_addr(s + swizzled(r, col)), in ? g + (long long)gr * ld + gc : g, in ? 16 : 0);
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
  } else {
    T zero;
    store_one(&zero, 0.f);
#pragma unroll 1
    for (int i = t; i < rows * cols; i += 128) {
      const int r = i / cols, col = i % cols;
      const int gr = r0 + r, gc = c0 + col;
      *reinterpret_cast<T*>(s + swizzled(r, col)) = (gr < R && gc < C) ? g[(long long)gr * ld + gc] : zero;
    }
  }
}


// ---- which tiles, and which slices of them, a block takes ----

// One piece of a block's work: slices [k_begin, k_end) (of 64 along K) of tile `tile`. A stream-K
// piece holds only some of its tile's slices: its partial sums join its tile's other pieces'.
struct Unit {
  int tile, k_begin, k_end;
  bool partial;        // a stream-K piece
  int piece, pieces;   // stream-K: its place among its tile's pieces (in the order of K), and their count
};

// The tiles of y numbered in groups of AK_GROUP_M tile rows (walked column by column, for L2
// reuse); block b takes tiles b, b + blocks, ... whole, and with stream-K its share of the slices
// of the last wave's tiles: slices [sk_start(b), sk_start(b + 1)) of them, counted tile after tile.
// The producer and both consumer warpgroups walk the same sequence (next()).
struct Schedule {
  int N, tiles_m, tiles_n, k_tiles, blocks, block;
  int dp_tiles;          // the tiles taken whole (all of them without stream-K)
  int sk_slices;         // stream-K: the slices of the tiles past dp_tiles, split over the blocks
  int next_tile;         // the block's next whole tile
  int sk_at, sk_end;     // the block's stream-K slices still to take

  __device__ Schedule(int M, int N_, int K) {
    N = N_;
    tiles_m = (M + AK_TILE_M - 1) / AK_TILE_M;
    tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N;
    k_tiles = (K + kTileK - 1) / kTileK;
    blocks = gridDim.x;
    block = blockIdx.x;
    const int tiles = tiles_m * tiles_n;
    dp_tiles = tiles;
    sk_slices = 0;
    if (AK_STREAM_K) {
      // Only where it pays and fits: a partial last wave after at least one full one, at least 2
      // slices a block, and room in the workspace (M x N floats) for 2 pieces' sums a block; and
      // where the slice arithmetic below stays in 32 bits ((slices + 1) * blocks).
      const int rest = tiles % blocks;
      const long long slices = (long long)rest * k_tiles;
      if (rest > 0 && tiles / blocks >= 1 && slices >= 2LL * blocks && (slices + 1) * blocks < (1LL << 31) &&
          2LL * blocks * kSlotFloats <= (long long)M * N) {
        dp_tiles = tiles - rest;
        sk_slices = (int)slices;
      }
    }
    next_tile = block;
    sk_at = sk_start(block);
    sk_end = sk_start(block + 1);
  }

  // The first stream-K slice of block b (0 without stream-K).
  __device__ int sk_start(int b) const { return sk_slices ? b * sk_slices / blocks : 0; }
  // The block whose stream-K slices hold slice s: the last b with sk_start(b) <= s.
  __device__ int sk_owner(int s) const { return min(blocks - 1, ((s + 1) * blocks + sk_slices - 1) / sk_slices - 1); }
  // Where piece p of stream-K tile `tile` keeps its partial sums: two slots a block (its range of
  // at most k_tiles slices touches at most two tiles), the second for the tile its range ends in.
  __device__ int slot(int tile, int p) const {
    const int r = tile - dp_tiles;
    const int b = sk_owner(r * k_tiles) + p;
    return 2 * b + (r != sk_start(b) / k_tiles);
  }

  __device__ bool next(Unit& u) {
    if (next_tile < dp_tiles) {
      u = {next_tile, 0, k_tiles, false, 0, 1};
      next_tile += blocks;
      return true;
    }
    if (sk_at < sk_end) {
      const int r = sk_at / k_tiles;
      const int k_begin = sk_at % k_tiles;
      const int k_end = min(k_tiles, k_begin + (sk_end - sk_at));
      const int first = sk_owner(r * k_tiles), last = sk_owner((r + 1) * k_tiles - 1);
      u = {dp_tiles + r, k_begin, k_end, true, block - first, last - first + 1};
      sk_at += k_end - k_begin;
      return true;
    }
    return false;
  }

  // Whether next() has another unit to give.
  __device__ bool has_next() const { return next_tile < dp_tiles || sk_at < sk_end; }

  // The first row and column of y of a tile.
  __device__ void origin(int tile, int& m0, int& n0) const {
    const int group = tile / (AK_GROUP_M * tiles_n);
    const int rows_in_group = min(AK_GROUP_M, tiles_m - group * AK_GROUP_M);
    const int in_group = tile % (AK_GROUP_M * tiles_n);
    m0 = (group * AK_GROUP_M + in_group % rows_in_group) * AK_TILE_M;
    n0 = (in_group / rows_in_group) * AK_TILE_N;
  }
  // A tile's counter: that of its first 64 x 64 block of y (a tile covers at least one whole block).
  __device__ int counter(int m0, int n0) const { return (m0 / 64) * ((N + 63) / 64) + n0 / 64; }
};

template <typename T>
__device__ __forceinline__ void produce(unsigned char* smem, unsigned full0, unsigned empty0, const T* x, const T* w, int M,
                                        int N, int K, const ak_tensor_map_args& maps) {
  const bool tma_a = maps.built & 1u, tma_b = (maps.built >> 1) & 1u;
  const int t = threadIdx.x;   // 0..127
  // With both maps built one thread does all the work; otherwise the warpgroup copies together.
  if ((tma_a && tma_b) ? t != 0 : false) return;
  if (t == 0) {
    if (tma_a) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[0]) : "memory");
    if (tma_b) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[1]) : "memory");
  }
  Schedule schedule(M, N, K);
  Unit u;
  unsigned it = 0;   // slices produced so far, across units: stage it % AK_STAGES, phase it / AK_STAGES
  while (schedule.next(u)) {
    int m0, n0;
    schedule.origin(u.tile, m0, n0);
    // w's boxes wholly past its last row are not loaded: what the stage holds there reaches
    // only columns of y that are never stored.
    const int atoms = min(kAtomsB, (N - n0 + 63) / 64);
    const unsigned tx = (tma_a ? kStageA : 0) + (tma_b ? atoms * kAtomN : 0);   // bytes the copy engine brings
    for (int kt = u.k_begin; kt < u.k_end; ++kt, ++it) {
      const unsigned s = it % AK_STAGES;
      const unsigned full = full0 + 8 * s, empty = empty0 + 8 * s;
      if (it >= AK_STAGES) bar_wait(empty, (it / AK_STAGES - 1) & 1);   // its last reader is done with it
      unsigned char* st = smem + s * kStage;
      const int k0 = kt * kTileK;
      if (!tma_a) fill_block<T, AK_TILE_M, kTileK>(st, x, K, m0, k0, M, K, t);
      if (!tma_b) fill_block<T, AK_TILE_N, kTileK>(st + kStageA, w, K, n0, k0, N, K, t);
      if (!(tma_a && tma_b)) {
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's writes, seen by wgmma
        asm volatile("bar.sync 1, 128;\n" ::: "memory");                 // the whole warpgroup's
      }
      if (t == 0) {
        if (tx) bar_arrive_tx(full, tx);
        else bar_arrive(full);
        if (tma_a) tma_load(smem_addr(st), &maps.map[0], k0, m0, full);
        if (tma_b)
          for (int atom = 0; atom < atoms; ++atom) tma_load(smem_addr(st + kStageA + atom * kAtomN), &maps.map[1], k0, n0 + atom * 64, full);
      }
    }
  }
}

// Each warp of a warpgroup holds 16 rows of the accumulators; per 8 columns j, a lane has rows
// lane/4 and lane/4 + 8 (h = 0, 1), columns 2 * (lane % 4) and the next: acc[4j + 2h], acc[4j + 2h + 1].
//
// The direct epilogue: each pair from registers to y, bounds checked.
template <typename T>
__device__ __forceinline__ void store_direct(const float (&acc)[AK_TILE_N / 2], T* c, int row0, int n0, int M, int N, int warp,
                                             int lane) {
  const bool pairs = N % 2 == 0;
#pragma unroll
  for (int j = 0; j < AK_TILE_N / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + warp * 16 + lane / 4 + h * 8;
      const int col = n0 + j * 8 + (lane % 4) * 2;
      if (row >= M || col >= N) continue;
      T* p = c + (long long)row * N + col;
      const float x = acc[4 * j + 2 * h], y = acc[4 * j + 2 * h + 1];
      if (pairs) store_pair(p, x, y);
      else {
        store_one(p, x);
        if (col + 1 < N) store_one(p + 1, y);
      }
    }
}

// The staged epilogue of one consumer warpgroup (64 rows): box by box (64 columns), the
// accumulators go as T into one of its kStoreBuffers swizzled box buffers (in turn) with
// stmatrix, and one thread hands the box to the copy engine, which stores it while the warpgroup
// fills the next buffer and then goes on to the next tile's wgmmas. A buffer is filled again only
// after the store that read it has: before the barrier of box j the storing thread waits until at
// most kStoreBuffers - 2 of its store groups have not read their buffers, so the buffer of box
// j + 1 (last read by box j + 1 - kStoreBuffers, with at most that many groups after it) is
// free after the barrier, across tiles too. Boxes wholly past y's edge are neither filled nor
// stored (fewer groups: the wait only gets stricter); every thread still meets every barrier.
template <typename T>
__device__ __forceinline__ void store_staged(const float (&acc)[AK_TILE_N / 2], unsigned staging, const ak_tensor_map* map,
                                             int row0, int n0, int M, int N, int wg, int warp, int lane, bool elected) {
  // stmatrix's matrices 0..3 are (j, h = 0), (j, h = 1), (j + 1, h = 0), (j + 1, h = 1): lane
  // gives the address of row lane % 8 of matrix lane / 8. Eight rows of a matrix lie in eight
  // different 16-byte columns of the swizzle, so each stmatrix phase touches every bank once.
  const int r = warp * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
  const int c8 = (lane >> 4) * 8;
#pragma unroll
  for (int box = 0; box < kBoxesC; ++box) {
    const unsigned buf = staging + (box % kStoreBuffers) * kBoxC;
    const bool live = row0 < M && n0 + box * 64 < N;   // the same for the whole warpgroup
    if (live) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int j = box * 8 + q * 2;
        stmatrix4(buf + swizzled(r, q * 16 + c8), pack_pair(acc[4 * j], acc[4 * j + 1], T()),
                  pack_pair(acc[4 * j + 2], acc[4 * j + 3], T()), pack_pair(acc[4 * j + 4], acc[4 * j + 5], T()),
                  pack_pair(acc[4 * j + 6], acc[4 * j + 7], T()));
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's writes, seen by the copy engine
    }
    if (elected) bulk_wait_read<kStoreBuffers - 2>();
    asm volatile("bar.sync %0, 128;\n" ::"r"(2 + wg) : "memory");      // the whole warpgroup's
    if (elected && live) {
      tma_store(map, n0 + box * 64, row0, buf);
      bulk_commit();
    }
  }
}

// Adds bias[col] to the accumulators of every column col of this lane (layout above).
template <typename T>
__device__ __forceinline__ void add_bias(float (&acc)[AK_TILE_N / 2], const T* bias, int n0, int N, int lane) {
#pragma unroll
  for (int j = 0; j < AK_TILE_N / 8; ++j) {
    const int col = n0 + j * 8 + (lane % 4) * 2;
    const float b0 = col < N ? to_float(bias[col]) : 0.f, b1 = col + 1 < N ? to_float(bias[col + 1]) : 0.f;
    acc[4 * j] += b0;
    acc[4 * j + 1] += b1;
    acc[4 * j + 2] += b0;
    acc[4 * j + 3] += b1;
  }
}

// The stage whose slice the warpgroup's wgmmas have read: free it for the producer.
__device__ __forceinline__ void release(unsigned empty, bool signals) {
  if (signals) bar_arrive(empty);
}

// The turns: a consumer warpgroup issues a tile's wgmmas only once the other has issued all of
// its previous tile's (each barrier: 128 threads arrive, the 128 of the waiting warpgroup sync).
__device__ __forceinline__ void wait_turn(int wg) {
  asm volatile("bar.sync %0, 256;\n" ::"r"(kTurnBarrier + wg) : "memory");
}
__device__ __forceinline__ void pass_turn(int to_wg) {
  asm volatile("bar.arrive %0, 256;\n" ::"r"(kTurnBarrier + to_wg) : "memory");
}

// A stream-K piece: its partial sums to its workspace slot (element e of thread t at e * 128 + t),
// then its tile's count. The piece that completes the count reads every piece's sums back in
// the order of K into acc (its own too, so the bits do not depend on which piece came last),
// sets the counter back to zero, and returns true: it stores the tile. The others return false.
__device__ __forceinline__ bool complete_tile(float (&acc)[kFragsM][kAcc], const Unit& u, const Schedule& schedule,
                                              float* workspace, unsigned* counter, volatile int* last_flag, int wg,
                                              int tid) {
  float* mine = workspace + (long long)schedule.slot(u.tile, u.piece) * kSlotFloats + tid;
#pragma unroll
  for (int f = 0; f < kFragsM; ++f)
#pragma unroll
    for (int e = 0; e < kAcc; ++e) __stcg(mine + (f * kAcc + e) * 128, acc[f][e]);
  __threadfence();   // the sums are visible to any block before the count says they are there
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + wg) : "memory");
  if (tid == 0) {
    const bool last = atomicAdd(counter, 1u) + 1 == (unsigned)u.pieces;
    if (last) *counter = 0u;   // every piece has counted: back to zero, as the contract asks of a launch
    __threadfence();
    *last_flag = last;
  }
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + wg) : "memory");
  if (!*last_flag) return false;
  __threadfence();
  for (int p = 0; p < u.pieces; ++p) {
    const float* sums = workspace + (long long)schedule.slot(u.tile, p) * kSlotFloats + tid;
#pragma unroll
    for (int f = 0; f < kFragsM; ++f)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) {
        const float v = __ldcg(sums + (f * kAcc + e) * 128);
        acc[f][e] = p == 0 ? v : acc[f][e] + v;
      }
  }
  return true;
}

template <typename T>
__device__ __forceinline__ void consume(unsigned char* smem, unsigned full0, unsigned empty0, volatile int* flags,
                                        const T* bias, T* y, float* workspace, unsigned* tile_counters, int M, int N,
                                        int K, int has_bias, const ak_tensor_map_args& maps) {
  const int wg = threadIdx.x / 128 - 1;   // 0 or 1: which of the block's tiles, in turn
  const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  const bool elected = tid == 0;          // the thread that frees stages and issues its warpgroup's stores
  // Through shared memory where y has a map (its rows a multiple of 16 bytes), else direct.
  const bool staged = (maps.built >> 2) & 1u;
  const unsigned staging = smem_addr(smem + AK_STAGES * kStage + wg * kStoreBuffers * kBoxC);
  if (staged && elected) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[2]) : "memory");
  const unsigned base = smem_addr(smem);
  Schedule schedule(M, N, K);
  float acc[kFragsM][kAcc];
  unsigned it = 0;   // slices consumed by either warpgroup so far: the producer's count
  Unit u;
  for (int j = 0; schedule.next(u); ++j) {
    const int slices = u.k_end - u.k_begin;
    if (j % 2 != wg) {   // the other warpgroup's unit: its slices pass by
      it += slices;
      continue;
    }
    if (j > 0) wait_turn(wg);
    const bool more = schedule.has_next();   // a next unit: the other warpgroup's turn comes after this one
#pragma unroll
    for (int f = 0; f < kFragsM; ++f)
#pragma unroll
      for (int e = 0; e < kAcc; ++e) acc[f][e] = 0.f;
    for (int kt = 0; kt < slices; ++kt, ++it) {
      const unsigned s = it % AK_STAGES;
      bar_wait(full0 + 8 * s, (it / AK_STAGES) & 1);
      const unsigned st = base + s * kStage;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk)
#pragma unroll
        for (int f = 0; f < kFragsM; ++f)
          wgmma(acc[f], descriptor(st + f * 64 * 128 + kk * 32, 16, 1024), descriptor(st + kStageA + kk * 32, 16, 1024), T());
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      // One batch stays in flight: the one before it is complete, and its stage is free.
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (kt > 0) release(empty0 + 8 * ((it - 1) % AK_STAGES), elected);
    }
    if (more) pass_turn(1 - wg);   // every wgmma of this unit issued: the other's may queue behind them
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (slices > 0) release(empty0 + 8 * ((it - 1) % AK_STAGES), elected);

    int m0, n0;
    schedule.origin(u.tile, m0, n0);
    if (u.partial &&
        !complete_tile(acc, u, schedule, workspace, tile_counters + schedule.counter(m0, n0), flags + wg, wg, tid))
      continue;
#pragma unroll
    for (int f = 0; f < kFragsM; ++f) {
      if (has_bias) add_bias(acc[f], bias, n0, N, lane);
      if (staged) store_staged<T>(acc[f], staging, &maps.map[2], m0 + f * 64, n0, M, N, wg, warp, lane, elected);
      else store_direct(acc[f], y, m0 + f * 64, n0, M, N, warp, lane);
    }
  }
  if (staged && elected) bulk_wait_all();
}

// fp32's path through this file: CUDA-core FMAs from shared memory, the tile in 64 x 64 pieces one
// after another, each of 256 threads a 4 x 4 block of a piece, K in order from 0 and then the
// bias, as the reference sums (its result to the bit). Its slices use the dynamic shared memory.
constexpr int kPlainK = 16, kPlainLd = 64 + 4;
static_assert(kThreads >= 256, "the fp32 path computes with 256 threads");
__device__ void plain_fp32_tile(const float* x, const float* w, const float* bias, float* y, int M, int N, int K,
                                int has_bias, int m0, int n0, int tile_m, int tile_n) {
  extern __shared__ __align__(16) unsigned char plain_smem[];
  float* xs = reinterpret_cast<float*>(plain_smem);   // [kPlainK][kPlainLd]: a K slice of 64 rows of x
  float* ws = xs + kPlainK * kPlainLd;                // the same of 64 rows of w
  const int t = threadIdx.x, ty = (t % 256) / 16, tx = t % 16;
  const bool computes = t < 256;
  for (int pm = m0; pm < m0 + tile_m && pm < M; pm += 64)
    for (int pn = n0; pn < n0 + tile_n && pn < N; pn += 64) {
      float acc[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
      for (int k0 = 0; k0 < K; k0 += kPlainK) {
        __syncthreads();   // every thread done with the last slice
        for (int i = t; i < 64 * kPlainK; i += kThreads) {
          const int r = i / kPlainK, k = k0 + i % kPlainK;
          xs[(i % kPlainK) * kPlainLd + r] = pm + r < M && k < K ? x[(long long)(pm + r) * K + k] : 0.f;
          ws[(i % kPlainK) * kPlainLd + r] = pn + r < N && k < K ? w[(long long)(pn + r) * K + k] : 0.f;
        }
        __syncthreads();
        if (!computes) continue;
#pragma unroll
        for (int k = 0; k < kPlainK; ++k) {
          const float4 a = *reinterpret_cast<const float4*>(xs + k * kPlainLd + ty * 4);
          const float4 b = *reinterpret_cast<const float4*>(ws + k * kPlainLd + tx * 4);
          const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
      }
      if (!computes) continue;
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int r = pm + ty * 4 + i, c = pn + tx * 4 + j;
          if (r < M && c < N) y[(long long)r * N + c] = has_bias ? acc[i][j] + bias[c] : acc[i][j];
        }
    }
}


// fp32: each block walks its tiles (the persistent grid) through plain_fp32_tile.
__device__ void plain_fp32_tiles(const float* x, const float* w, const float* bias, float* y, int M, int N, int K,
                                 int has_bias) {
  const int tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N, tiles = (M + AK_TILE_M - 1) / AK_TILE_M * tiles_n;
  for (int u = blockIdx.x; u < tiles; u += gridDim.x)
    plain_fp32_tile(x, w, bias, y, M, N, K, has_bias, u / tiles_n * AK_TILE_M, u % tiles_n * AK_TILE_N, AK_TILE_M, AK_TILE_N);
}

template <typename T>
__device__ __forceinline__ void ping_pong(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                          T* __restrict__ y, float* __restrict__ workspace, unsigned* tile_counters, int M,
                                          int N, int K, int has_bias, const ak_tensor_map_args& maps) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);   // swizzle atoms are 1024-aligned
  const unsigned full0 = smem_addr(smem + AK_STAGES * kStage + kStaging), empty0 = full0 + 8 * AK_STAGES;
  volatile int* flags = reinterpret_cast<volatile int*>(smem + AK_STAGES * kStage + kStaging + kBarriers);

  if (threadIdx.x == 0) {
    for (int s = 0; s < AK_STAGES; ++s) {
      bar_init(full0 + 8 * s, 1);    // the producer's arrival (+ the copy engine's bytes)
      bar_init(empty0 + 8 * s, 1);   // the one consumer warpgroup that read the slice
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();   // every barrier initialised before anyone arrives on it or copies into it

  if (threadIdx.x < 128) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    produce<T>(smem, full0, empty0, x, w, M, N, K, maps);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    consume<T>(smem, full0, empty0, flags, bias, y, workspace, tile_counters, M, N, K, has_bias, maps);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
matmul_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y,
              float* __restrict__ workspace, unsigned* tile_counters, int M, int N, int K, int has_bias,
              const __grid_constant__ ak_tensor_map_args maps) {
  if constexpr (sizeof(T) == 4) plain_fp32_tiles(x, w, bias, y, M, N, K, has_bias);
  else ping_pong<T>(x, w, bias, y, workspace, tile_counters, M, N, K, has_bias, maps);
}
