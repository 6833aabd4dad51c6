// flash_attention variant tma_pingpong: FlashAttention-3's structure, a TMA loading warpgroup and two computing warpgroups that take turns on the tensor cores
//
// What it changes and why: wgmma_registers runs one warpgroup's loop in lock step: issue q k^T,
// wait, softmax, issue P v, wait, with every thread also copying k and v. While a warpgroup
// computes exponentials its tensor cores idle, and the exponentials (MUFU) cost about half of
// the two products. This file splits the block by role, as FlashAttention-3 does on the H100:
// - one loading warpgroup (registers given back with setmaxnreg.dec): a single thread moves q
//   once per tile and k, v blocks of AK_BLOCK_N keys with TMA (the harness's tensor maps over
//   q, k, v seen as rows of their seq stride, 64-column boxes with the 128-byte swizzle, the layout wgmma
//   reads) into AK_STAGES stages, each completing on a "full" mbarrier and freed by an "empty"
//   one. A map the harness could not build (its bit of maps.built clear) is filled by the whole
//   warpgroup instead, with cp.async (or element loads from a misaligned base) into the same
//   swizzled layout, zeros past the head, then a proxy fence and an ordinary arrive;
// - two computing warpgroups (setmaxnreg.inc), 64 query rows each of a 128-row tile. Two named
//   barriers pass a turn between them, so that one issues its q k^T and P v while the other
//   does its softmax (ping-pong). Within a warpgroup q k^T of block j and P v of block j - 1
//   go out together, and the softmax of block j starts as soon as its scores are in, while P v
//   still runs (where the registers allow: ptxas budgets them by the block's entry count of
//   168, so at D = 128 with 128-key blocks it waits for P v before the exponentials, and the
//   overlap is the other warpgroup's); P goes from the score registers to the A registers of
//   P v (wgmma's mma.sync layout), v is read N-major through the descriptor's transpose bit
//   as in wgmma_registers;
// - causal: a tile reads keys up to its last row only; only the blocks that cross a
//   warpgroup's diagonal are masked (key > row gets -inf). Keys past S meet only rows past S,
//   which are never stored; the rows a box reads past a head's end are the next head's finite
//   values (or TMA's zeros at the tensor's end), so P is exactly 0 against them;
// - a persistent grid (ak_persistent): the work is cut into units of two q tiles of one head,
//   the longest causal tile with the shortest (p and q_tiles - 1 - p), so that every unit costs
//   the same q_tiles + 1 key blocks; each block walks the units blockIdx.x, + gridDim.x, ...
//   in head-major order, so blocks side by side share k and v in L2 and the loader fetches the
//   next tile's q and k while the current one finishes (one tile a block, walked in order,
//   leaves the blocks up to 12% apart at the benchmark shape; the pairs, 3%). O is divided by the row sums and stored from registers, rows < S only.
//
// Contract version 2 (grouped-query heads, strided operands, causal or not):
// - a map sees its operand as rows of the operand's seq stride (docs/kernel-contract.md): a
//   projection's [B * S, H * D] rows with the head a column offset, a contiguous tensor's
//   [B * H * S, D] rows with the head a row offset. A head's first row is at element
//   off = b * stride_batch + h * stride_head, so its box starts at column off % stride_seq and row
//   off / stride_seq, worked out once per tile; the fallback copies read rows stride_seq apart;
// - query head h reads kv head h / (Hq / Hkv): the units stay in (b, h) order, so the query heads
//   of one kv head run side by side and share its k and v in L2;
// - without the causal flag a tile reads every key block, and only the keys past S are masked
//   (a box past a head's last row reads the next batch's or head's rows, or TMA's zeros);
//   the pairs of tiles then cost the same anyway.
// - the loading thread now also holds each tile's head offsets and strides: with 24 registers
//   after setmaxnreg ptxas spilled 144 bytes (56 with 40), with 56 none. The computing
//   warpgroups lose nothing by 224 instead of 240: ptxas fits them in the entry budget of 168
//   (ptxas -v: 168 registers, no spill, for both dtypes).
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed, plus the tensor maps parameter because the
// file declares ak_tensor_maps; the harness reads the launch geometry from the ak_* constants
// below and instantiates the template for __half and __nv_bfloat16. wgmma, setmaxnreg and TMA
// need sm_90a.
//
// bench: autokernel bench kernels_cuda/flash_attention/variants/tma_pingpong.cu --kernel flash_attention --dtype fp16
// measured: 914.27 us median, spread 1.6% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// The version of the flash_attention contract this file follows (docs/kernel-contract.md).
extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_BLOCK_N 128         // keys per k/v block (64 or 128)
#define AK_STAGES 2            // k/v blocks in flight (2 or 3; 3 with AK_BLOCK_N 128 fills 225 KiB)
#define AK_PRODUCER_REGS 56    // registers per loading thread after setmaxnreg (24 to 56, a multiple of 8)
#define AK_CONSUMER_REGS 224   // registers per computing thread (a multiple of 8; with the above, at most 64512 in all)
#define AK_PINGPONG 1          // 1: the computing warpgroups take turns issuing their MMAs; 0: both issue freely
#define AK_PERSISTENT 1        // 1: a block per SM walks the work; 0: the tiled grid, half of whose blocks find no pair to walk

constexpr int kBlockM = 128;   // query rows per tile: 64 per computing warpgroup
constexpr int kThreads = 384;  // warpgroup 0 loads, 1 and 2 compute
constexpr int kMaxD = 128;
constexpr int kLoadBar = 1;    // named barrier of the loading warpgroup (0 is __syncthreads)
constexpr int kTurnBar = 2;    // kTurnBar + w: computing warpgroup w may issue its MMAs
static_assert(AK_BLOCK_N == 64 || AK_BLOCK_N == 128, "64 or 128 keys a block");
static_assert(AK_STAGES >= 2 && AK_STAGES <= 3, "2 or 3 stages");
static_assert(AK_PRODUCER_REGS % 8 == 0 && AK_PRODUCER_REGS >= 24 && AK_PRODUCER_REGS <= 56, "setmaxnreg wants 24..256 in steps of 8");
static_assert(AK_CONSUMER_REGS % 8 == 0 && AK_CONSUMER_REGS >= 168 && AK_CONSUMER_REGS <= 256, "setmaxnreg wants 24..256 in steps of 8");
// The block starts with 168 registers a thread (65536 / 384, rounded down to 8): what the
// computing warpgroups take, the loading one must have given back.
static_assert(AK_PRODUCER_REGS * 128 + AK_CONSUMER_REGS * 256 <= 168 * kThreads, "more registers than the block holds");
static_assert(AK_PINGPONG == 0 || AK_PINGPONG == 1, "0 or 1");
static_assert(AK_PERSISTENT == 0 || AK_PERSISTENT == 1, "0 or 1");

// Shared memory for D = kMaxD: q, then per stage a k block and a v block, each a row of 64-column
// atoms of 128-byte rows (1024-byte aligned), then the mbarriers; + room to align to 1024.
constexpr int kQBytesMax = kBlockM * kMaxD * 2;
constexpr int kTileBytesMax = AK_BLOCK_N * kMaxD * 2;
constexpr int kBarriers = 2 + 4 * AK_STAGES;   // full/empty of q, full/empty of k and v per stage
constexpr int kSmem = kQBytesMax + 2 * AK_STAGES * kTileBytesMax + kBarriers * 8 + 1024;
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have");

// ---- the tensor maps parameter (docs/kernel-contract.md, tensor maps) ----
struct alignas(64) ak_tensor_map { unsigned long long opaque[16]; };   // a CUtensorMap
struct ak_tensor_map_args { ak_tensor_map map[8]; unsigned int built; };
static_assert(sizeof(ak_tensor_map_args) == 1088, "the layout the harness passes");

// operand, box_cols, box_rows, swizzle_bytes, l2_promotion_bytes: 64 columns (128 bytes) a box,
// the 128-byte swizzle; a D = 128 row is two boxes.
extern "C" __constant__ int ak_tensor_maps[3][5] = {
    {0, 64, kBlockM, 128, 256},      // map 0: q, one tile of query rows
    {1, 64, AK_BLOCK_N, 128, 256},   // map 1: k, one block of keys
    {2, 64, AK_BLOCK_N, 128, 256},   // map 2: v
};

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = kBlockM;   // sizes the grid: B * Hq * ceil(S / 128) (the contract's)
extern "C" __constant__ int ak_smem_bytes = kSmem;
extern "C" __constant__ int ak_persistent = AK_PERSISTENT;

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// ---- mbarriers and named barriers ----
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nAK_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra AK_WAIT;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void named_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
// One box of a tensor map into shared memory, counted on `bar`'s transaction bytes.
__device__ __forceinline__ void tma_load(unsigned dst, const ak_tensor_map* map, int col, int row, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(map), "r"(col), "r"(row), "r"(bar)
      : "memory");
}

// ---- wgmma ----
// A shared-memory matrix descriptor: start address, leading and stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long descriptor(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Pins registers an asynchronous wgmma reads or writes to this point of the program, so that the
// compiler moves no use of them across a wgmma fence or wait (the asm is empty).
template <int N>
__device__ __forceinline__ void pin(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void pin(unsigned (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+r"(r[i][0]), "+r"(r[i][1]), "+r"(r[i][2]), "+r"(r[i][3])::"memory");
}

#define AK_ACC64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define AK_OUT64 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define AK_ACC128 \
  AK_ACC64 \
  ",%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define AK_OUT128 \
  AK_OUT64, \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// _ss: a and b from shared memory, both K-major, the accumulator kept when `keep` is non-zero;
// _rs: a from registers, b N-major (transposed on the way in). The element type picks the instruction.
#define AK_WGMMA_SS(N, ACC, OUT, TY, CT, A, B, K)                                                                      \
  __device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], unsigned long long da, unsigned long long db, int keep, \
                                           CT) {                                                                      \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " K ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY     \
                 "." TY " {" ACC "}, " A ", " B ", p, 1, 1, 0, 0;\n}\n"                                                \
                 : OUT                                                                                                \
                 : "l"(da), "l"(db), "r"(keep));                                                                      \
  }
#define AK_WGMMA_RS(N, ACC, OUT, TY, CT, A0, A1, A2, A3, B)                                                            \
  __device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long db, CT) {    \
    asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY  \
                 " {" ACC "}, {" A0 ", " A1 ", " A2 ", " A3 "}, " B ", p, 1, 1, 1;\n}\n"                               \
                 : OUT                                                                                                \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));                                              \
  }
AK_WGMMA_SS(64, AK_ACC64, AK_OUT64, "f16", __half, "%32", "%33", "%34")
AK_WGMMA_SS(64, AK_ACC64, AK_OUT64, "bf16", __nv_bfloat16, "%32", "%33", "%34")
AK_WGMMA_SS(128, AK_ACC128, AK_OUT128, "f16", __half, "%64", "%65", "%66")
AK_WGMMA_SS(128, AK_ACC128, AK_OUT128, "bf16", __nv_bfloat16, "%64", "%65", "%66")
AK_WGMMA_RS(64, AK_ACC64, AK_OUT64, "f16", __half, "%32", "%33", "%34", "%35", "%36")
AK_WGMMA_RS(64, AK_ACC64, AK_OUT64, "bf16", __nv_bfloat16, "%32", "%33", "%34", "%35", "%36")
AK_WGMMA_RS(128, AK_ACC128, AK_OUT128, "f16", __half, "%64", "%65", "%66", "%67", "%68")
AK_WGMMA_RS(128, AK_ACC128, AK_OUT128, "bf16", __nv_bfloat16, "%64", "%65", "%66", "%67", "%68")
#undef AK_WGMMA_SS
#undef AK_WGMMA_RS

__device__ __forceinline__ unsigned pack(float x, float y, __half) {
  __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ unsigned pack(float x, float y, __nv_bfloat16) {
  __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// ---- the problem, as the arguments give it ----
// Element strides of one [B, heads, S, D] operand. Plain ints, as the arguments come: they stay
// in the parameter space until used, rather than in registers the computing warpgroups need.
struct AkStrides {
  int batch, head, seq;
};
struct Problem {
  int Hq, Hkv, S, causal;
  AkStrides q, k, v, o;
};

// ---- the schedule every role walks in the same order ----
struct Tile {
  int b, h, hk;         // batch, query head, the kv head it reads
  int q0;               // first query row
  int blocks;           // k/v blocks the tile reads: up to its last row when causal, all of them otherwise
};
__device__ __forceinline__ int pairs_of(int q_tiles) { return (q_tiles + 1) / 2; }
// Tile `half` (0: the long one, 1: the short one) of unit u; false when the unit has one tile.
__device__ __forceinline__ bool tile_at(int u, int half, int q_tiles, const Problem& pr, Tile& w) {
  const int pairs = pairs_of(q_tiles), p = u % pairs;
  const int kq = half ? p : q_tiles - 1 - p;
  if (half && kq == q_tiles - 1 - p) return false;   // the middle tile of an odd count
  const int head = u / pairs;   // b * Hq + h
  w.b = head / pr.Hq;
  w.h = head % pr.Hq;
  w.hk = w.h / (pr.Hq / pr.Hkv);
  w.q0 = kq * kBlockM;
  const int kv_end = pr.causal ? min(pr.S, w.q0 + kBlockM) : pr.S;
  w.blocks = (kv_end + AK_BLOCK_N - 1) / AK_BLOCK_N;
  return true;
}

// Where one head's rows start: the element offset of its row 0, and the box coordinates of that
// row in a map whose rows are the operand's seq stride apart.
struct HeadRows {
  long long off;
  int col, row;
};
// Once per tile, in the loading thread. 32-bit division: a 64-bit one is a called subroutine, too
// heavy for the loading warpgroup's few registers; an operand of 2^32 elements or more is past
// what this file handles.
__device__ __forceinline__ HeadRows head_rows(const AkStrides& st, int b, int h) {
  const long long off = (long long)b * st.batch + (long long)h * st.head;
  if (off >> 32) __trap();
  const unsigned u = unsigned(off), ld = unsigned(st.seq);
  return {off, int(u % ld), int(u / ld)};
}

// Where the barriers live (shared-memory addresses, 8 bytes each).
struct Barriers {
  unsigned base;
  __device__ unsigned full_q() const { return base; }
  __device__ unsigned empty_q() const { return base + 8; }
  __device__ unsigned full_k(int s) const { return base + 16 + 8 * s; }
  __device__ unsigned empty_k(int s) const { return base + 16 + 8 * (AK_STAGES + s); }
  __device__ unsigned full_v(int s) const { return base + 16 + 8 * (2 * AK_STAGES + s); }
  __device__ unsigned empty_v(int s) const { return base + 16 + 8 * (3 * AK_STAGES + s); }
};

// ---- the loading warpgroup ----
// ROWS rows of D elements from row r0 of one head's [S, D] matrix (rows `ld` elements apart, the
// head starting at `hr`) into 64-column atoms of 128-byte rows (atom stride ROWS * 128 bytes),
// each 16-byte chunk XOR-ed with its row's index within its group of eight: what TMA writes with
// the 128-byte swizzle. With `tma` one thread issues the boxes; otherwise the warpgroup copies,
// zeros past row S, and signals when all of its writes are visible to wgmma.
template <typename T, int D, int ROWS>
__device__ __forceinline__ void load_block(bool tma, const ak_tensor_map* map, unsigned dst, const T* g, HeadRows hr,
                                           long long ld, int r0, int S, unsigned full, int lt) {
  if (tma) {
    if (lt == 0) {
      mbar_arrive_tx(full, ROWS * D * 2);
#pragma unroll
      for (int a = 0; a < D / 64; ++a) tma_load(dst + a * ROWS * 128, map, hr.col + a * 64, hr.row + r0, full);
    }
    return;
  }
  constexpr int kChunks = D / 8;
  const T* src = g + hr.off;
  const bool aligned = (reinterpret_cast<unsigned long long>(g) & 15) == 0;
  for (int i = lt; i < ROWS * kChunks; i += 128) {
    const int r = i / kChunks, c = i % kChunks;
    const bool in = r0 + r < S;
    const unsigned d = dst + (c / 8) * (ROWS * 128) + r * 128 + (((c ^ r) & 7) << 4);
    const T* s = in ? src + (long long)(r0 + r) * ld + c * 8 : g;
    if (aligned) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(s), "r"(in ? 16 : 0) : "memory");
    } else {   // a base TMA could not map is not 16-byte aligned either: element by element
#pragma unroll 1
      for (int e = 0; e < 8; ++e) {
        const unsigned short x = in ? reinterpret_cast<const unsigned short*>(s)[e] : (unsigned short)0;
        asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(d + 2 * e), "h"(x) : "memory");
      }
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's writes, seen by wgmma
  named_sync(kLoadBar, 128);
  if (lt == 0) mbar_arrive(full);
}

template <typename T, int D>
__device__ __forceinline__ void produce(const T* q, const T* k, const T* v, const Problem& pr, int units, int q_tiles,
                                        unsigned smem, Barriers bar, const ak_tensor_map_args& maps) {
  const int S = pr.S;
  constexpr int kQBytes = kBlockM * D * 2, kTileBytes = AK_BLOCK_N * D * 2;
  const int lt = threadIdx.x;   // 0..127
  const unsigned built = maps.built;
  const bool q_tma = built & 1u, k_tma = built & 2u, v_tma = built & 4u;
  if (q_tma && k_tma && v_tma && lt != 0) return;   // TMA alone needs one thread
  if (lt == 0) {
    if (q_tma) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[0]) : "memory");
    if (k_tma) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[1]) : "memory");
    if (v_tma) asm volatile("prefetch.tensormap [%0];\n" ::"l"(&maps.map[2]) : "memory");
  }
  const unsigned qs = smem, kv = smem + kQBytes;   // stage s: k at kv + 2 s kTileBytes, v after it
  int kv_count = 0, tile_count = 0;
  HeadRows k_rows, v_rows;   // of the current tile's kv head
  auto load_k = [&](int j) {
    const int n = kv_count + j, s = n % AK_STAGES;
    mbar_wait(bar.empty_k(s), ((n / AK_STAGES) & 1) ^ 1);
    load_block<T, D, AK_BLOCK_N>(k_tma, &maps.map[1], kv + s * 2 * kTileBytes, k, k_rows, pr.k.seq, j * AK_BLOCK_N, S,
                                 bar.full_k(s), lt);
  };
  auto load_v = [&](int j) {
    const int n = kv_count + j, s = n % AK_STAGES;
    mbar_wait(bar.empty_v(s), ((n / AK_STAGES) & 1) ^ 1);
    load_block<T, D, AK_BLOCK_N>(v_tma, &maps.map[2], kv + s * 2 * kTileBytes + kTileBytes, v, v_rows, pr.v.seq,
                                 j * AK_BLOCK_N, S, bar.full_v(s), lt);
  };
  for (int u = blockIdx.x; u < units; u += gridDim.x)
  for (int half = 0; half < 2; ++half, ++tile_count) {
    Tile w;
    if (!tile_at(u, half, q_tiles, pr, w)) break;
    k_rows = head_rows(pr.k, w.b, w.hk);
    v_rows = head_rows(pr.v, w.b, w.hk);
    mbar_wait(bar.empty_q(), (tile_count & 1) ^ 1);
    load_block<T, D, kBlockM>(q_tma, &maps.map[0], qs, q, head_rows(pr.q, w.b, w.h), pr.q.seq, w.q0, S, bar.full_q(), lt);
    // The order the computing warpgroups use them: k0, then k(j) before v(j - 1).
    load_k(0);
    for (int j = 1; j < w.blocks; ++j) {
      load_k(j);
      load_v(j - 1);
    }
    load_v(w.blocks - 1);
    kv_count += w.blocks;
  }
}

// ---- the computing warpgroups ----
// The online softmax of one block of scores in place: s becomes P (unnormalised, exp2 with the
// scale folded in), m and l the running max (of raw scores) and sum, alpha what the output
// accumulated so far must be multiplied by. Accumulator layout: per 8 keys j, s[4j], s[4j + 1]
// are row row0, s[4j + 2], s[4j + 3] row row0 + 8, keys 8j + 2 (lane % 4) + {0, 1}. With `mask`,
// a key past `last` is masked: past its row when causal (which covers the keys past S for the
// rows that are stored), past S - 1 otherwise.
template <int N>
__device__ __forceinline__ void online_softmax(float (&s)[N / 2], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                               bool mask, bool causal, int S, int kv0, int row0, float scale_log2,
                                               int lane) {
  const float neg_inf = __int_as_float(0xff800000);
  if (mask) {
#pragma unroll
    for (int e = 0; e < N / 2; ++e) {
      const int key = kv0 + (e / 4) * 8 + (lane % 4) * 2 + (e & 1), row = row0 + ((e >> 1) & 1) * 8;
      if (key > (causal ? row : S - 1)) s[e] = neg_inf;
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {   // row row0 + 8h; a quad of lanes shares it
    float mx = m[h];
#pragma unroll
    for (int j = 0; j < N / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float base = mx == neg_inf ? 0.f : mx * scale_log2;   // a row with no key yet stays at zero
    alpha[h] = fast_exp2(fmaf(m[h], scale_log2, -base));        // 0 while m is -inf
    m[h] = mx;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
      s[4 * j + 2 * h] = fast_exp2(fmaf(s[4 * j + 2 * h], scale_log2, -base));
      s[4 * j + 2 * h + 1] = fast_exp2(fmaf(s[4 * j + 2 * h + 1], scale_log2, -base));
      sum += s[4 * j + 2 * h] + s[4 * j + 2 * h + 1];
    }
    l[h] = l[h] * alpha[h] + sum;   // this lane's keys; the quad adds up at the end
  }
}

// P as the A registers of P v, 16 keys a step.
template <int N, typename T>
__device__ __forceinline__ void to_operand(unsigned (&p)[N / 16][4], const float (&s)[N / 2]) {
#pragma unroll
  for (int j = 0; j < N / 16; ++j) {
    p[j][0] = pack(s[8 * j + 0], s[8 * j + 1], T());
    p[j][1] = pack(s[8 * j + 2], s[8 * j + 3], T());
    p[j][2] = pack(s[8 * j + 4], s[8 * j + 5], T());
    p[j][3] = pack(s[8 * j + 6], s[8 * j + 7], T());
  }
}

__device__ __forceinline__ void release(unsigned bar, int lane) {
  __syncwarp();
  if (lane == 0) mbar_arrive(bar);   // one arrive per warp: 8 warps free a buffer
}
__device__ __forceinline__ void take_turn(int cw) {
  if (AK_PINGPONG) named_sync(kTurnBar + cw, 256);
}
__device__ __forceinline__ void pass_turn(int cw) {
  if (AK_PINGPONG) named_arrive(kTurnBar + (cw ^ 1), 256);
}

template <typename T, int D>
__device__ __forceinline__ void consume(T* o, const Problem& pr, int units, int q_tiles, unsigned smem, Barriers bar,
                                        int cw) {
  const int S = pr.S;
  const bool causal = pr.causal != 0;
  constexpr int N = AK_BLOCK_N;
  constexpr int kQBytes = kBlockM * D * 2, kTileBytes = N * D * 2;
  // O (D / 2), P (N / 4) and the next scores (N / 2) held at once, in registers a thread.
  constexpr bool kSplitSoftmax = D / 2 + N / 4 + N / 2 <= 128;
  const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
  const unsigned qs = smem + cw * 64 * 128, kv = smem + kQBytes;
  const float scale_log2 = 1.4426950408889634f * rsqrtf(float(D));   // exp(x / sqrt(D)) = exp2(x * this)
  const bool o_aligned = (reinterpret_cast<unsigned long long>(o) & 3) == 0;

  // S = q k^T over 16 of head_dim a step, q and k both K-major.
  auto issue_qk = [&](float (&s)[N / 2], int stage) {
    const unsigned ks = kv + stage * 2 * kTileBytes;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const int atom = kk / 4, within = (kk % 4) * 32;
      wgmma_ss(s, descriptor(qs + atom * kBlockM * 128 + within, 16, 1024),
               descriptor(ks + atom * N * 128 + within, 16, 1024), kk, T());
    }
    wgmma_commit();
  };
  // O += P v, v N-major, 16 keys (two groups of 8 rows) a step.
  auto issue_pv = [&](float (&acc)[D / 2], const unsigned (&p)[N / 16][4], int stage) {
    const unsigned vs = kv + stage * 2 * kTileBytes + kTileBytes;
#pragma unroll
    for (int j = 0; j < N / 16; ++j) wgmma_rs(acc, p[j], descriptor(vs + j * 2 * 1024, N * 128, 1024), T());
    wgmma_commit();
  };

  if (AK_PINGPONG && cw == 1) named_arrive(kTurnBar + 0, 256);   // warpgroup 0 takes the first turn
  int kv_count = 0, tile_count = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x)
  for (int half = 0; half < 2; ++half, ++tile_count) {
    Tile w;
    if (!tile_at(u, half, q_tiles, pr, w)) break;
    const int wq0 = w.q0 + cw * 64;                  // this warpgroup's first query row
    const int row0 = wq0 + warp * 16 + lane / 4;     // this lane's rows: row0 and row0 + 8
    float acc[D / 2];
#pragma unroll
    for (int e = 0; e < D / 2; ++e) acc[e] = 0.f;
    float m[2] = {__int_as_float(0xff800000), __int_as_float(0xff800000)}, l[2] = {0.f, 0.f}, alpha[2];
    float s[N / 2];
    unsigned p[N / 16][4];
    mbar_wait(bar.full_q(), tile_count & 1);

    {   // block 0: q k^T, then its softmax
      const int st = kv_count % AK_STAGES;
      take_turn(cw);
      mbar_wait(bar.full_k(st), (kv_count / AK_STAGES) & 1);
      wgmma_fence();
      issue_qk(s, st);
      pass_turn(cw);
      wgmma_wait<0>();
      pin(s);
      release(bar.empty_k(st), lane);
      if (w.blocks == 1) release(bar.empty_q(), lane);
      online_softmax<N>(s, m, l, alpha, (causal && N - 1 > wq0) || N > S, causal, S, 0, row0, scale_log2, lane);
      to_operand<N, T>(p, s);
    }
    for (int j = 1; j < w.blocks; ++j) {   // q k^T of block j and P v of block j - 1 in flight, then the softmax of j
      const int n = kv_count + j, st = n % AK_STAGES, pst = (n - 1) % AK_STAGES;
      take_turn(cw);
      mbar_wait(bar.full_k(st), (n / AK_STAGES) & 1);
      mbar_wait(bar.full_v(pst), ((n - 1) / AK_STAGES) & 1);   // before the fence: no branch between the MMAs
      pin(acc);
      pin(p);
      wgmma_fence();
      issue_qk(s, st);
      issue_pv(acc, p, pst);
      pass_turn(cw);
      wgmma_wait<1>();
      pin(s);
      release(bar.empty_k(st), lane);
      if (j == w.blocks - 1) release(bar.empty_q(), lane);
      const int kv0 = j * N;
      online_softmax<N>(s, m, l, alpha, (causal && kv0 + N - 1 > wq0) || kv0 + N > S, causal, S, kv0, row0,
                        scale_log2, lane);
      pin(s);   // the exponentials run here, while P v is in flight, not after its wait
      pin(l);
      // ptxas schedules the wait below above the exponentials when they share a basic block; a
      // branch that never fires (l is a sum of exponentials) keeps them apart. ptxas judges the
      // registers by the block's entry budget (168), not the 240 of setmaxnreg: where O, P and
      // the next scores do not fit in it together it would serialise every wgmma (C7512), so
      // those shapes (D = 128 with 128-key blocks) leave the order to ptxas.
      if constexpr (kSplitSoftmax)
        if (l[0] < 0.f) __trap();
      wgmma_wait<0>();
      pin(acc);
      pin(p);
      release(bar.empty_v(pst), lane);
#pragma unroll
      for (int e = 0; e < D / 2; ++e) acc[e] *= alpha[(e >> 1) & 1];
      to_operand<N, T>(p, s);
    }
    {   // P v of the last block
      const int n = kv_count + w.blocks - 1, st = n % AK_STAGES;
      take_turn(cw);
      mbar_wait(bar.full_v(st), (n / AK_STAGES) & 1);
      pin(acc);
      pin(p);
      wgmma_fence();
      issue_pv(acc, p, st);
      pass_turn(cw);
      wgmma_wait<0>();
      pin(acc);
      release(bar.empty_v(st), lane);
    }
    kv_count += w.blocks;

    // The tile's batch and head, worked out again here rather than held in registers through the loop.
    const int head = u / pairs_of(q_tiles);
    T* o_head = o + (long long)(head / pr.Hq) * pr.o.batch + (long long)(head % pr.Hq) * pr.o.head;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int row = row0 + h * 8;
      if (row >= S) continue;
      const float inv = 1.f / sum;
      T* orow = o_head + (long long)row * pr.o.seq + (lane % 4) * 2;
      if (o_aligned) {
#pragma unroll
        for (int j = 0; j < D / 8; ++j)
          *reinterpret_cast<unsigned*>(orow + j * 8) = pack(acc[4 * j + 2 * h] * inv, acc[4 * j + 2 * h + 1] * inv, T());
      } else {   // an output base that is not 4-byte aligned: element by element
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
          orow[j * 8] = T(acc[4 * j + 2 * h] * inv);
          orow[j * 8 + 1] = T(acc[4 * j + 2 * h + 1] * inv);
        }
      }
    }
  }
  if (AK_PINGPONG && cw == 0) named_sync(kTurnBar + 0, 256);   // take warpgroup 1's last turn: no barrier left half-passed
}

template <typename T, int D>
__device__ __forceinline__ void attend(const T* q, const T* k, const T* v, T* o, int B, const Problem& pr, unsigned smem,
                                       const ak_tensor_map_args& maps) {
  constexpr int kQBytes = kBlockM * D * 2, kTileBytes = AK_BLOCK_N * D * 2;
  const Barriers bar{smem + kQBytes + 2 * AK_STAGES * kTileBytes};
  if (threadIdx.x == 0) {
    mbar_init(bar.full_q(), 1);
    mbar_init(bar.empty_q(), 8);
    for (int s = 0; s < AK_STAGES; ++s) {
      mbar_init(bar.full_k(s), 1);
      mbar_init(bar.empty_k(s), 8);
      mbar_init(bar.full_v(s), 1);
      mbar_init(bar.empty_v(s), 8);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const int q_tiles = (pr.S + kBlockM - 1) / kBlockM;
  const int units = B * pr.Hq * pairs_of(q_tiles);   // the work a block walks: pairs of q tiles
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(AK_PRODUCER_REGS));
    produce<T, D>(q, k, v, pr, units, q_tiles, smem, bar, maps);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(AK_CONSUMER_REGS));
    consume<T, D>(o, pr, units, q_tiles, smem, bar, wg - 1);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
flash_attention_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                       int B, int Hq, int Hkv, int S, int D, int causal,
                       int q_stride_batch, int q_stride_head, int q_stride_seq,
                       int k_stride_batch, int k_stride_head, int k_stride_seq,
                       int v_stride_batch, int v_stride_head, int v_stride_seq,
                       int o_stride_batch, int o_stride_head, int o_stride_seq,
                       const __grid_constant__ ak_tensor_map_args maps) {
  extern __shared__ unsigned char smem_raw[];
  const unsigned raw = smem_addr(smem_raw);
  const unsigned smem = raw + ((1024 - (raw & 1023)) & 1023);   // swizzle atoms are 1024-aligned
  const Problem pr{Hq, Hkv, S, causal,
                   {q_stride_batch, q_stride_head, q_stride_seq}, {k_stride_batch, k_stride_head, k_stride_seq},
                   {v_stride_batch, v_stride_head, v_stride_seq}, {o_stride_batch, o_stride_head, o_stride_seq}};
  if (D == 128) attend<T, 128>(q, k, v, o, B, pr, smem, maps);
  else if (D == 64) attend<T, 64>(q, k, v, o, B, pr, smem, maps);
  else __trap();   // outside what this file handles: fail loudly
}
