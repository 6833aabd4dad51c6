// matmul variant tma_warp_specialized: a persistent, warp-specialized wgmma kernel fed by TMA through mbarrier stages, optionally multicast across a cluster of two, its tiles stored through shared memory by TMA
//
// What it changes and why: in the wgmma_pipeline variant every thread both copies and multiplies,
// and the whole block meets at a barrier once per slice of K, so the tensor cores wait whenever
// the slowest warp is still copying. Here the roles are split. Warpgroup 0 is the producer: it
// gives most of its registers away (setmaxnreg) and one of its threads asks the Tensor Memory
// Accelerator for each slice of 64 along K (x: a 128 x 64 box, w: boxes of 64 rows of N x 64 of
// K), written by the copy engine in the same 128-byte swizzle wgmma_pipeline builds by hand, both
// K-major: w as a Linear stores it, [N, K], is what wgmma reads without a transpose. Each of
// AK_STAGES stages has a "full" mbarrier (the copy engine counts the bytes in) and an "empty" one
// (the consumers say they are done with it), so nothing waits at a block-wide barrier. Warpgroups
// 1 and 2 are the consumers: each takes 64 rows of the tile and all AK_TILE_N columns with one
// m64nNk16 wgmma per 16 of K, keeps one batch in flight, and frees a stage as soon as the
// wgmmas that read it are complete. The grid is persistent: each block walks over output tiles
// (grouped by AK_GROUP_M tile rows so that the tiles running at once share a and b in L2, or with
// AK_RASTER_N 1 by AK_GROUP_M tile columns, walked along N), and the producer runs into the next
// tile while the consumers store the last one. The mbarrier phases run on with one slice counter
// across tiles. With AK_CLUSTER 2, the two blocks of a cluster take vertically adjacent tiles,
// which share their columns of b: each loads half of b's boxes and multicasts them to both, and a
// stage is free only when the consumers of both blocks have released it (they arrive on the empty
// barriers of both blocks). Both blocks walk the same number of tiles; a block whose tile lies
// past the last row loads the last one again and stores nothing.
// Where the harness could not build a tensor map (rows whose length is not a multiple of 16
// bytes, an unaligned base), the producer warpgroup fills the same swizzled stages itself with
// cp.async (or element by element), zeros past the edges, and arrives on the full barrier, so
// one structure serves every shape.
// The epilogue. Both consumer warpgroups store a tile at the same time, and the tensor cores
// wait for them: with AK_EPILOGUE 0 each thread converts its 128 accumulators and writes them
// to c itself, 4 bytes at a time and bounds checked, 64 scattered stores a thread before the
// next tile's first wgmma. The load-side knobs (more stages, clusters, narrower tiles) did not
// move the time, so the loads are not the limit, and this store is the likely wait.
// With AK_EPILOGUE 1 (the default), each warpgroup converts its 64 x AK_TILE_N accumulators one
// box of 64 x 64 at a time into shared memory with stmatrix (four 8 x 8 matrices per
// instruction, the accumulator fragment's own layout, conflict-free in the 128-byte swizzle the
// map over c expects), and one thread hands each box to the copy engine (a TMA store, which
// clips rows and columns past c's edge itself). Two 8 KB box buffers per warpgroup alternate:
// the copy engine reads one while the threads fill the other, and the warpgroup goes on to the
// next tile's wgmmas as soon as its last box is handed over, the stores still in flight. The
// staging takes 32 KB, so 4 stages of 256-column tiles still fit (4 x 48 + 32 = 224 KB). With
// AK_STORE_BUFFERS 4 a warpgroup stages its whole tile and waits only for stores handed over
// three boxes earlier, at the price of a stage (3 stages). Where c has no map (its rows not a multiple
// of 16 bytes), the direct stores serve.
// The bias is added to the accumulators before either epilogue. fp32 has no path through these
// 16-bit stages and maps (a 64-element box row is 256 bytes of fp32, wider than the swizzle, so
// the harness builds no map in fp32): a CUDA-core product tiled in shared memory serves it over
// the same tiles, in the reference's order and far from the tensor cores (as in every matmul file).
// Not yet: two consumer warpgroups taking turns (ping-pong) so that one stores while the other
// multiplies.
//
// workspace (fp32, shaped as y, undefined at every launch) and tile_counters (zero at every
// launch, to be left zero) are the contract's room for split-K and stream-K; unused here.
//
// The kernel-file contract (docs/kernel-contract.md, with tensor maps, clusters and persistent
// grids): device code and launch knobs only, no host code; the entry point and its arguments are
// fixed, plus the trailing tensor-map parameter; the harness reads the launch geometry from the
// ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float. wgmma,
// setmaxnreg and TMA need sm_90a (the H100's architecture as the harness compiles for it).
//
// bench: autokernel bench kernels_cuda/matmul/variants/tma_warp_specialized.cu --kernel matmul --dtype fp16
// measured: 182.02 us median, spread 0.8% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_N 256  // columns of c per tile (128 or 256); a tile has 128 rows, 64 per consumer warpgroup
#define AK_STAGES 4    // slices of 64 along K in flight (2 or more; with 256 columns 4 at most, with 128 columns 7, or 6 with AK_EPILOGUE 1)
#define AK_GROUP_M 8   // tile rows (of clusters) numbered together for L2 reuse; tile columns with AK_RASTER_N 1
#define AK_CLUSTER 1   // blocks per cluster (1, or 2: adjacent tile rows share b through TMA multicast)
#define AK_EPILOGUE 1  // 0: accumulators stored straight to c; 1: through shared memory and TMA stores (direct where c has no map)
#define AK_RASTER_N 0  // 0: tiles numbered down M within a group of tile rows; 1: along N within a group of tile columns
#define AK_STORE_BUFFERS 2   // AK_EPILOGUE 1: 64 x 64 staging buffers per consumer warpgroup (2, or 4 = a whole 256-column tile, with 3 stages)

constexpr int kTileM = 128;                          // two consumer warpgroups of 64 rows
constexpr int kTileK = 64;                           // one 128-byte swizzle row of 16-bit elements
constexpr int kThreads = 384;                        // producer warpgroup + two consumers
constexpr int kAtomsB = AK_TILE_N / 64;              // w's boxes of 64 rows (of N) per stage
constexpr int kStageA = kTileM * kTileK * 2;         // bytes
constexpr int kStageB = kTileK * AK_TILE_N * 2;
constexpr int kStage = kStageA + kStageB;
constexpr int kBoxesC = AK_TILE_N / 64;              // TMA store boxes of 64 rows x 64 columns per consumer warpgroup
constexpr int kBoxC = 64 * 64 * 2;                   // bytes of one box, one 128-byte swizzle row per row of c
constexpr int kStaging = AK_EPILOGUE * 2 * AK_STORE_BUFFERS * kBoxC;   // box buffers of both consumer warpgroups
constexpr int kBarriers = 2 * AK_STAGES * 8;         // full and empty mbarriers
constexpr int kSmem = kStage * AK_STAGES + kStaging + kBarriers + 1024;   // + room to align the stages to 1024 bytes
constexpr int kProducerRegs = 56;                    // setmaxnreg: the producer gives registers away
constexpr int kConsumerRegs = 224;                   // and the consumers take them (168 a thread at launch)
static_assert(AK_TILE_N == 128 || AK_TILE_N == 256, "tiles of 128 or 256 columns (one wgmma instruction each)");
static_assert(AK_STAGES >= 2, "the pipeline needs 2 or more stages");
static_assert(AK_GROUP_M >= 1, "group at least one tile row");
static_assert(AK_CLUSTER == 1 || AK_CLUSTER == 2, "clusters of 1 or 2 blocks");
static_assert(AK_EPILOGUE == 0 || AK_EPILOGUE == 1, "AK_EPILOGUE is 0 (direct stores) or 1 (shared memory and TMA stores)");
static_assert(AK_RASTER_N == 0 || AK_RASTER_N == 1, "AK_RASTER_N is 0 (down M in a group) or 1 (along N in a group)");
static_assert(AK_STORE_BUFFERS == 2 || AK_STORE_BUFFERS == 4, "2 or 4 staging buffers per consumer warpgroup");
static_assert(AK_STORE_BUFFERS <= kBoxesC, "no more staging buffers than boxes of c per warpgroup");
static_assert(kAtomsB % AK_CLUSTER == 0, "the blocks of a cluster split b's boxes evenly");
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have (the stages, plus 8 KB per staging buffer and warpgroup with AK_EPILOGUE 1)");
// The block starts with 168 registers a thread (65536 / 384, rounded down to a multiple of 8);
// setmaxnreg only moves them between warpgroups, and a consumer asking for more than the pool
// holds would wait forever.
static_assert(kProducerRegs * 128 + 2 * kConsumerRegs * 128 <= 168 * kThreads, "setmaxnreg asks for more registers than the block has");
static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0 && kProducerRegs >= 24 && kConsumerRegs <= 256, "setmaxnreg counts are multiples of 8 in 24..256");
// Bytes of one box of w: 64 rows of N, one 128-byte swizzle row (64 of K) each.
constexpr unsigned kAtomN = 64 * 128;

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = kTileM;
extern "C" __constant__ int ak_tile_n = AK_TILE_N;
extern "C" __constant__ int ak_smem_bytes = kSmem;
extern "C" __constant__ int ak_cluster_blocks = AK_CLUSTER;
extern "C" __constant__ int ak_persistent = 1;
// operand, box_cols, box_rows, swizzle_bytes, l2_promotion_bytes
extern "C" __constant__ int ak_tensor_maps[2 + AK_EPILOGUE][5] = {
    {0, kTileK, kTileM, 128, 256},   // x: 128 rows x 64 columns of K
    {1, kTileK, 64, 128, 256},       // w: 64 rows of N x 64 columns of K
#if AK_EPILOGUE
    {3, 64, 64, 128, 0},             // y: 64 rows x 64 columns, one staging box
#endif
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
// Arrives on the mbarrier at the same offset in the shared memory of block `rank` of the cluster.
__device__ __forceinline__ void bar_arrive_cluster(unsigned bar, unsigned rank) {
  asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar), "r"(rank) : "memory");
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
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// One box of a tensor map into this block's shared memory, counted on `bar`.
__device__ __forceinline__ void tma_load(unsigned dst, const ak_tensor_map* map, int col, int row, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
               ::"r"(dst), "l"(map), "r"(col), "r"(row), "r"(bar) : "memory");
}
// One box into the same offset of the shared memory of every block in `mask`, each counted on its own `bar`.
__device__ __forceinline__ void tma_load_multicast(unsigned dst, const ak_tensor_map* map, int col, int row, unsigned bar,
                                                   unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3}], [%4], %5;\n"
               ::"r"(dst), "l"(map), "r"(col), "r"(row), "r"(bar), "h"(mask) : "memory");
}

// One staged box of c out to global memory; the copy engine clips rows and columns past c's edge.
__device__ __forceinline__ void tma_store(const ak_tensor_map* map, int col, int row, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(map), "r"(col), "r"(row), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// All but this thread's `pending` latest bulk store groups have read their shared memory (they may still be writing c).
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

// The tiles a cluster takes: AK_CLUSTER vertically adjacent tiles (one per block) sharing their
// columns, numbered in groups of AK_GROUP_M cluster rows (or tile columns, AK_RASTER_N) so that
// neighbours in time share L2.
struct TileOrder {
  int rows, cols, count;   // in cluster tiles
  __device__ TileOrder(int M, int N) {
    rows = ((M + kTileM - 1) / kTileM + AK_CLUSTER - 1) / AK_CLUSTER;
    cols = (N + AK_TILE_N - 1) / AK_TILE_N;
    count = rows * cols;
  }
  // The first row and column of c of this block's tile of cluster tile u.
  __device__ void origin(int u, int rank, int& m0, int& n0) const {
    int row, col;
    if (AK_RASTER_N) {   // groups of AK_GROUP_M tile columns, walked along N first
      const int group = u / (AK_GROUP_M * rows);
      const int cols_in_group = min(AK_GROUP_M, cols - group * AK_GROUP_M);
      const int in_group = u % (AK_GROUP_M * rows);
      col = group * AK_GROUP_M + in_group % cols_in_group;
      row = in_group / cols_in_group;
    } else {             // groups of AK_GROUP_M tile rows, walked down M first
      const int group = u / (AK_GROUP_M * cols);
      const int rows_in_group = min(AK_GROUP_M, rows - group * AK_GROUP_M);
      const int in_group = u % (AK_GROUP_M * cols);
      row = group * AK_GROUP_M + in_group % rows_in_group;
      col = in_group / rows_in_group;
    }
    m0 = (row * AK_CLUSTER + rank) * kTileM;
    n0 = col * AK_TILE_N;
  }
};

template <typename T>
__device__ __forceinline__ void produce(unsigned char* smem, unsigned full0, unsigned empty0, const T* x, const T* w, int M,
                                        int N, int K, const ak_tensor_map_args& maps, unsigned rank) {
  const bool tma_a = maps.built & 1u, tma_b = (maps.built >> 1) & 1u;
  const int t = threadIdx.x;   // 0..127
  // With both maps built one thread does all the work; otherwise the warpgroup copies together.
  if ((tma_a && tma_b) ? t != 0 : false) return;
  if (t == 0) {
    if (tma_a) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[0]) : "memory");
    if (tma_b) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[1]) : "memory");
  }
  const TileOrder order(M, N);
  const int k_tiles = (K + kTileK - 1) / kTileK;
  const int last_m0 = (M - 1) / kTileM * kTileM;
  unsigned it = 0;   // slices produced so far, across tiles: stage it % AK_STAGES, phase it / AK_STAGES
  for (int u = blockIdx.x / AK_CLUSTER; u < order.count; u += gridDim.x / AK_CLUSTER) {
    int m0, n0;
    order.origin(u, rank, m0, n0);
    m0 = min(m0, last_m0);   // a block past the last tile row loads a real one (and its consumers store nothing)
    // w's boxes wholly past its last row are not loaded: what the stage holds there reaches
    // only columns of y that are never stored. Both blocks of a cluster skip the same ones.
    const int atoms = min(kAtomsB, (N - n0 + 63) / 64);
    const unsigned tx = (tma_a ? kStageA : 0) + (tma_b ? atoms * kAtomN : 0);   // bytes the copy engine brings
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const unsigned s = it % AK_STAGES;
      const unsigned full = full0 + 8 * s, empty = empty0 + 8 * s;
      if (it >= AK_STAGES) bar_wait(empty, (it / AK_STAGES - 1) & 1);   // every consumer of the cluster done with it
      unsigned char* st = smem + s * kStage;
      const int k0 = kt * kTileK;
      if (!tma_a) fill_block<T, kTileM, kTileK>(st, x, K, m0, k0, M, K, t);
      if (!tma_b) fill_block<T, AK_TILE_N, kTileK>(st + kStageA, w, K, n0, k0, N, K, t);
      if (!(tma_a && tma_b)) {
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's writes, seen by wgmma
        asm volatile("bar.sync 1, 128;\n" ::: "memory");                 // the whole warpgroup's
      }
      if (t == 0) {
        if (tx) bar_arrive_tx(full, tx);
        else bar_arrive(full);
        if (tma_a) tma_load(smem_addr(st), &maps.map[0], k0, m0, full);
        if (tma_b) {
          for (int atom = rank; atom < atoms; atom += AK_CLUSTER) {
            const unsigned dst = smem_addr(st + kStageA + atom * kAtomN);
            if (AK_CLUSTER == 1) tma_load(dst, &maps.map[1], k0, n0 + atom * 64, full);
            else tma_load_multicast(dst, &maps.map[1], k0, n0 + atom * 64, full, (unsigned short)((1u << AK_CLUSTER) - 1));
          }
        }
      }
    }
  }
}

// The wgmmas reading stage `s` are complete: free it for the producers of every block of the cluster.
__device__ __forceinline__ void release(unsigned empty, bool signals) {
  if (!signals) return;
  if (AK_CLUSTER == 1) bar_arrive(empty);
  else
    for (unsigned r = 0; r < AK_CLUSTER; ++r) bar_arrive_cluster(empty, r);
}

// Each warp of a warpgroup holds 16 rows of the accumulators; per 8 columns j, a lane has rows
// lane/4 and lane/4 + 8 (h = 0, 1), columns 2 * (lane % 4) and the next: acc[4j + 2h], acc[4j + 2h + 1].
//
// The direct epilogue: each pair from registers to c, bounds checked.
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
// accumulators go as T into one of its AK_STORE_BUFFERS swizzled box buffers (in turn) with
// stmatrix, and one thread hands the box to the copy engine, which stores it while the warpgroup
// fills the next buffer and then goes on to the next tile's wgmmas. A buffer is filled again only
// after the store that read it has: before the barrier of box j the storing thread waits until at
// most AK_STORE_BUFFERS - 2 of its store groups have not read their buffers, so the buffer of box
// j + 1 (last read by box j + 1 - AK_STORE_BUFFERS, with at most that many groups after it) is
// free after the barrier, across tiles too. Boxes wholly past c's edge are neither filled nor
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
    const unsigned buf = staging + (box % AK_STORE_BUFFERS) * kBoxC;
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
    if (elected) bulk_wait_read<AK_STORE_BUFFERS - 2>();
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

template <typename T>
__device__ __forceinline__ void consume(unsigned char* smem, unsigned full0, unsigned empty0, const T* bias, T* c, int M,
                                        int N, int K, int has_bias, const ak_tensor_map_args& maps, unsigned rank) {
  const int wg = threadIdx.x / 128 - 1;   // 0 or 1: which 64 rows of the tile
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const bool signals = threadIdx.x % 128 == 0;
  const bool elected = signals;           // the thread that issues and waits for its warpgroup's stores
  // Through shared memory where c has a map (its rows a multiple of 16 bytes), else direct.
  const bool staged = AK_EPILOGUE == 1 && ((maps.built >> 2) & 1u);
  const unsigned staging = smem_addr(smem + AK_STAGES * kStage + wg * AK_STORE_BUFFERS * kBoxC);
  if (staged && elected) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[2]) : "memory");
  const TileOrder order(M, N);
  const int k_tiles = (K + kTileK - 1) / kTileK;
  const unsigned base = smem_addr(smem);
  float acc[AK_TILE_N / 2];
  unsigned it = 0;
  for (int u = blockIdx.x / AK_CLUSTER; u < order.count; u += gridDim.x / AK_CLUSTER) {
    int m0, n0;
    order.origin(u, rank, m0, n0);
#pragma unroll
    for (int e = 0; e < AK_TILE_N / 2; ++e) acc[e] = 0.f;
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
      const unsigned s = it % AK_STAGES;
      bar_wait(full0 + 8 * s, (it / AK_STAGES) & 1);
      const unsigned st = base + s * kStage;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk)
        wgmma(acc, descriptor(st + wg * 64 * 128 + kk * 32, 16, 1024),
              descriptor(st + kStageA + kk * 32, 16, 1024), T());
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      // One batch stays in flight: the one before it is complete, and its stage is free.
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (kt > 0) release(empty0 + 8 * ((it - 1) % AK_STAGES), signals);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (k_tiles > 0) release(empty0 + 8 * ((it - 1) % AK_STAGES), signals);
    if (has_bias) add_bias(acc, bias, n0, N, lane);

    if (staged) store_staged<T>(acc, staging, &maps.map[2], m0 + wg * 64, n0, M, N, wg, warp, lane, elected);
    else store_direct(acc, c, m0 + wg * 64, n0, M, N, warp, lane);
  }
  if (staged && elected) bulk_wait_all();
}

// fp32's path through this file: CUDA-core FMAs from shared memory, the tile in 64 x 64 pieces one
// after another, each of 256 threads a 4 x 4 block of a piece, K in order from 0 and then the
// bias, as the reference sums: its result to the bit, the one fp32 sum that passes everywhere
// (the starter says why). Its slices use the dynamic shared memory.
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
  const int tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N, tiles = (M + kTileM - 1) / kTileM * tiles_n;
  for (int u = blockIdx.x; u < tiles; u += gridDim.x)
    plain_fp32_tile(x, w, bias, y, M, N, K, has_bias, u / tiles_n * kTileM, u % tiles_n * AK_TILE_N, kTileM, AK_TILE_N);
}

template <typename T>
__device__ __forceinline__ void warp_specialized(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                                 T* __restrict__ y, int M, int N, int K, int has_bias,
                                                 const ak_tensor_map_args& maps) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);   // swizzle atoms are 1024-aligned
  const unsigned full0 = smem_addr(smem + AK_STAGES * kStage + kStaging), empty0 = full0 + 8 * AK_STAGES;
  const unsigned rank = AK_CLUSTER == 1 ? 0 : cluster_rank();

  if (threadIdx.x == 0) {
    for (int s = 0; s < AK_STAGES; ++s) {
      bar_init(full0 + 8 * s, 1);                    // the producer's arrival (+ the copy engine's bytes)
      bar_init(empty0 + 8 * s, 2 * AK_CLUSTER);      // one per consumer warpgroup of the cluster
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  // Every barrier of the cluster initialised before anyone arrives on it or copies into it.
  if (AK_CLUSTER > 1) cluster_sync();
  else __syncthreads();

  if (threadIdx.x < 128) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    produce<T>(smem, full0, empty0, x, w, M, N, K, maps, rank);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    consume<T>(smem, full0, empty0, bias, y, M, N, K, has_bias, maps, rank);
  }
  // A block's barriers and stages receive the other block's arrivals and copies until both are done.
  if (AK_CLUSTER > 1) cluster_sync();
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
matmul_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y,
              float* __restrict__ workspace, unsigned* tile_counters, int M, int N, int K, int has_bias,
              const __grid_constant__ ak_tensor_map_args maps) {
  if constexpr (sizeof(T) == 4) plain_fp32_tiles(x, w, bias, y, M, N, K, has_bias);
  else warp_specialized<T>(x, w, bias, y, M, N, K, has_bias, maps);
}
