// matmul variant wgmma_pipeline: Hopper's warpgroup MMA (wgmma) reading 128-byte-swizzled shared memory, a multi-stage cp.async pipeline
//
// What it changes and why: mma.sync (the mma_pipeline variant) feeds the tensor cores from
// registers, one warp and one 16x8x16 step at a time, and on an H100 it cannot reach more than
// about half of what the tensor cores do. sm_90's wgmma lets a warpgroup (four warps) multiply a
// 64-row slice of a by a whole AK_TILE_N-wide slice of b straight from shared memory, described
// by 64-bit matrix descriptors, asynchronously. Here each block holds AK_TILE_M / 64 warpgroups;
// slices of 64 along K travel with cp.async into AK_STAGES stages, laid out in the 128-byte
// swizzle the descriptors name (each 16-byte chunk of a 128-byte row XOR-ed with the row's index
// within its group of eight), x and w alike as K-major rows: w as a Linear stores it, [N, K], is
// the layout wgmma reads without a transpose. After each slice lands, the copies are
// fenced for the tensor cores' asynchronous proxy, the block meets at a barrier, and each
// warpgroup issues four m64nNk16 steps, waiting only for those of the slice before, so the
// tensor cores always have a batch queued. Accumulators stay in registers until
// they are stored, the bias added on the way; blocks are numbered in groups of AK_GROUP_M tile
// rows for L2 reuse. fp32 has no path through these 16-bit stages: a CUDA-core product tiled in
// shared memory serves it, in the reference's order and far from the tensor cores (as in every
// matmul file).
// Not yet: TMA loads and a producer warpgroup that keeps loading while the others multiply.
//
// workspace (fp32, shaped as y, undefined at every launch) and tile_counters (zero at every
// launch, to be left zero) are the contract's room for split-K and stream-K; unused here.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
// wgmma needs sm_90a (the H100's architecture as the harness compiles for it).
//
// bench: autokernel bench kernels_cuda/matmul/variants/wgmma_pipeline.cu --kernel matmul --dtype fp16
// measured: 351.77 us median, spread 0.5% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 128  // rows of c per block: 64 per warpgroup (64, 128, 192 or 256)
#define AK_TILE_N 256  // columns of c per block (64, 128 or 256)
#define AK_STAGES 4    // slices of 64 along K in flight (2 or more)
#define AK_GROUP_M 8   // tile rows numbered together, for L2 reuse

constexpr int kTileK = 64;                        // one 128-byte swizzle row of 16-bit elements
constexpr int kGroups = AK_TILE_M / 64;           // warpgroups
constexpr int kThreads = kGroups * 128;
constexpr int kInstrN = AK_TILE_N;                // columns one wgmma instruction covers
constexpr int kInstrs = AK_TILE_N / kInstrN;      // instructions per k16 step
constexpr int kStageA = AK_TILE_M * kTileK * 2;   // bytes
constexpr int kStageB = kTileK * AK_TILE_N * 2;
constexpr int kStage = kStageA + kStageB;
constexpr int kSmem = kStage * AK_STAGES + 1024;  // + room to align the stages to 1024 bytes
static_assert(AK_TILE_M % 64 == 0 && AK_TILE_M >= 64 && AK_TILE_M <= 256, "64 rows per warpgroup, at most 4 warpgroups");
static_assert(AK_TILE_N == 64 || AK_TILE_N == 128 || AK_TILE_N == 256, "tiles of 64, 128 or 256 columns");
static_assert(AK_STAGES >= 3, "the pipeline needs 3 or more stages: one loading, one multiplied, one finishing");
static_assert(AK_GROUP_M >= 1, "group at least one tile row");
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have");

// ---- launch geometry, read by the harness from the compiled module ----
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

// c += a * b over 16 of K, a and b from shared memory, both K-major (no transpose);
// the element type picks the instruction.
__device__ __forceinline__ void wgmma_n64(float (&d)[32], unsigned long long da, unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" WGMMA_ACC64
               "}, %32, %33, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT64 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n64(float (&d)[32], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" WGMMA_ACC64
               "}, %32, %33, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT64 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long da, unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" WGMMA_ACC128
               "}, %64, %65, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT128 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WGMMA_ACC128
               "}, %64, %65, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT128 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da, unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {" WGMMA_ACC256
               "}, %128, %129, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT256 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" WGMMA_ACC256
               "}, %128, %129, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT256 : "l"(da), "l"(db));
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
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

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

// Byte offset of element (row, col) of a block of 128-byte rows in the 128-byte swizzle: the
// 16-byte chunk index XOR the row's index within its group of eight.
__device__ __forceinline__ int swizzled(int row, int col) {
  return row * 128 + ((((col >> 3) ^ row) & 7) << 4) + (col & 7) * 2;
}

// Copies a rows x 64 block of a row-major matrix (row stride ld, bounds R x C) at (r0, c0) into
// swizzled 128-byte rows, zeros past the edge; 16-byte cp.async chunks when ld allows, else
// element by element.
template <typename T>
__device__ __forceinline__ void load_block(unsigned char* s, int rows, const T* g, int ld, int r0, int c0, int R, int C) {
  if (ld % 8 == 0) {
    for (int i = threadIdx.x; i < rows * kTileK / 8; i += kThreads) {
      const int r = i / (kTileK / 8), c = (i % (kTileK / 8)) * 8;
      const int gr = r0 + r, gc = c0 + c;
      const bool in = gr < R && gc < C;   // C % 8 == 0 here: a chunk is whole or absent
      copy16(s + swizzled(r, c), in ? g + (long long)gr * ld + gc : g, in ? 16 : 0);
    }
  } else {
    T zero;
    store_one(&zero, 0.f);
    for (int i = threadIdx.x; i < rows * kTileK; i += kThreads) {
      const int r = i / kTileK, c = i % kTileK;
      const int gr = r0 + r, gc = c0 + c;
      *reinterpret_cast<T*>(s + swizzled(r, c)) = (gr < R && gc < C) ? g[(long long)gr * ld + gc] : zero;
    }
  }
}

template <typename T>
__device__ __forceinline__ void wgmma_tile(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                           T* __restrict__ y, int M, int N, int K, int has_bias) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);   // swizzle atoms are 1024-aligned

  const int tiles_m = (M + AK_TILE_M - 1) / AK_TILE_M, tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N;
  const int group = blockIdx.x / (AK_GROUP_M * tiles_n);
  const int rows_in_group = min(AK_GROUP_M, tiles_m - group * AK_GROUP_M);
  const int in_group = blockIdx.x % (AK_GROUP_M * tiles_n);
  const int m0 = (group * AK_GROUP_M + in_group % rows_in_group) * AK_TILE_M;
  const int n0 = (in_group / rows_in_group) * AK_TILE_N;
  const int wg = threadIdx.x / 128;

  float acc[kInstrs][kInstrN / 2];
#pragma unroll
  for (int i = 0; i < kInstrs; ++i)
#pragma unroll
    for (int e = 0; e < kInstrN / 2; ++e) acc[i][e] = 0.f;

  const int k_tiles = (K + kTileK - 1) / kTileK;
  auto load_slice = [&](int kt) {
    if (kt < k_tiles) {
      unsigned char* st = smem + (kt % AK_STAGES) * kStage;
      load_block<T>(st, AK_TILE_M, x, K, m0, kt * kTileK, M, K);
      load_block<T>(st + kStageA, AK_TILE_N, w, K, n0, kt * kTileK, N, K);
    }
    commit_copies();
  };
  // One wgmma batch stays in flight while the next is issued, so the slice loaded at step kt goes
  // to the stage of slice kt - 2, which every warpgroup has finished by the barrier of step kt.
  for (int kt = 0; kt < AK_STAGES - 2; ++kt) load_slice(kt);
  for (int kt = 0; kt < k_tiles; ++kt) {
    wait_copies<AK_STAGES - 3>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's copies, seen by wgmma
    __syncthreads();   // everyone's copies of slice kt; every warpgroup done with slice kt - 2
    load_slice(kt + AK_STAGES - 2);
    const unsigned char* st = smem + (kt % AK_STAGES) * kStage;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < kTileK / 16; ++kk) {
      const unsigned long long da = descriptor(st + wg * 64 * 128 + kk * 32, 16, 1024);
#pragma unroll
      for (int i = 0; i < kInstrs; ++i)
        wgmma<kInstrN, T>(acc[i], da, descriptor(st + kStageA + i * kInstrN * 128 + kk * 32, 16, 1024));
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  wait_copies<0>();

  // Each warp of a warpgroup holds 16 rows; per 8 columns, a lane has rows lane/4 and lane/4 + 8,
  // columns 2 * (lane % 4) and the next (mma.sync's accumulator layout, repeated along N).
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const bool pairs = N % 2 == 0;
#pragma unroll
  for (int i = 0; i < kInstrs; ++i)
#pragma unroll
    for (int j = 0; j < kInstrN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wg * 64 + warp * 16 + lane / 4 + h * 8;
        const int col = n0 + i * kInstrN + j * 8 + (lane % 4) * 2;
        if (row >= M || col >= N) continue;
        T* p = y + (long long)row * N + col;
        const float v0 = acc[i][4 * j + 2 * h] + (has_bias ? to_float(bias[col]) : 0.f);
        const float v1 = acc[i][4 * j + 2 * h + 1] + (has_bias && col + 1 < N ? to_float(bias[col + 1]) : 0.f);
        if (pairs) store_pair(p, v0, v1);
        else {
          store_one(p, v0);
          if (col + 1 < N) store_one(p + 1, v1);
        }
      }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
matmul_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y,
              float* __restrict__ workspace, unsigned* tile_counters, int M, int N, int K, int has_bias) {
  if constexpr (sizeof(T) == 4) {
    const int tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N;   // any one-to-one map of blocks to tiles serves here
    plain_fp32_tile(x, w, bias, y, M, N, K, has_bias, (blockIdx.x / tiles_n) * AK_TILE_M, (blockIdx.x % tiles_n) * AK_TILE_N,
                    AK_TILE_M, AK_TILE_N);
  } else {
    wgmma_tile<T>(x, w, bias, y, M, N, K, has_bias);
  }
}
