// matmul variant wgmma_split_tf32: fp32 at fp32 accuracy on Hopper's warpgroup MMA: each slice split into TF32 big and small parts in shared memory, three wgmma products (fp16 and bf16 as wgmma_pipeline)
//
// What it changes and why: mma_pipeline runs fp32 as split TF32 through mma.sync, which on an H100
// reaches about half of what the tensor cores do. Here the same arithmetic runs on wgmma. TF32
// keeps 10 bits of mantissa; each element v is taken as big = tf32(v) and small = tf32(v - big),
// and each product as small*big + big*small + big*big, accumulated in fp32 (small*small lies
// below fp32's precision). wgmma reads its operands from shared memory, so the split is made
// there: slices of 32 fp32 values along K (one 128-byte swizzle row) travel with cp.async into
// AK_STAGES stages, x and w alike as K-major rows (w as a Linear stores it, [N, K]: TF32 wgmma
// takes only K-major operands, and this is that layout); when a slice has landed, the block
// rounds it to big in place and writes the small parts into one of two small buffers in the
// same swizzled layout, and each warpgroup issues three m64nNk8 TF32 wgmmas per 8 of K from the
// big and small descriptors, one batch in flight. The small buffer a slice writes was last read
// by the batch two slices back, which is complete by then. For fp16 and bf16 the file is
// wgmma_pipeline's loop with slices of 64 along K (the same 128 bytes) and no split.
// Accumulators stay in registers until they are stored, the bias added on the way; blocks are
// numbered in groups of AK_GROUP_M tile rows for L2 reuse.
// Not yet: TMA loads and a producer warpgroup (tma_warp_specialized), the split made once per
// element of w rather than once per tile that reads it.
//
// workspace (fp32, shaped as y, undefined at every launch) and tile_counters (zero at every
// launch, to be left zero) are the contract's room for split-K and stream-K; unused here.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
// wgmma needs sm_90a (the H100's architecture as the harness compiles for it).
//
// bench: autokernel bench kernels_cuda/matmul/variants/wgmma_split_tf32.cu --kernel matmul --dtype fp16
// measured: FAIL, no time: its fp32 instantiation is wrong on one-huge-per-row inputs (numerical stability, 16x the tolerance; NVIDIA H200, 2026-11-27)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 128  // rows of y per block: 64 per warpgroup (64, 128, 192 or 256)
#define AK_TILE_N 128  // columns of y per block (64, 128 or 256)
#define AK_STAGES 3    // slices of 128 bytes along K in flight (3 or more)
#define AK_GROUP_M 8   // tile rows numbered together, for L2 reuse

constexpr int kRowBytes = 128;                     // one 128-byte swizzle row: 64 of K in 16 bits, 32 in fp32
constexpr int kGroups = AK_TILE_M / 64;            // warpgroups
constexpr int kThreads = kGroups * 128;
constexpr int kStageA = AK_TILE_M * kRowBytes;     // bytes
constexpr int kStageB = AK_TILE_N * kRowBytes;
constexpr int kStage = kStageA + kStageB;
constexpr int kSmallBuffers = 2;                   // fp32: the small parts of two slices
constexpr int kSmem = kStage * (AK_STAGES + kSmallBuffers) + 1024;   // + room to align to 1024 bytes
static_assert(AK_TILE_M % 64 == 0 && AK_TILE_M >= 64 && AK_TILE_M <= 256, "64 rows per warpgroup, at most 4 warpgroups");
static_assert(AK_TILE_N == 64 || AK_TILE_N == 128 || AK_TILE_N == 256, "tiles of 64, 128 or 256 columns");
static_assert(AK_STAGES >= 3, "the pipeline needs 3 or more stages: one loading, one multiplied, one finishing");
static_assert(AK_GROUP_M >= 1, "group at least one tile row");
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have (the stages and two small buffers)");

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
__device__ __forceinline__ unsigned long long descriptor(const void* p) {
  constexpr unsigned lbo = 16, sbo = 1024;   // K-major in the 128-byte swizzle: 8-row groups 1024 bytes apart
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

// d += a * b over 16 of K (16-bit) or 8 of K (TF32), both K-major from shared memory; the element
// type picks the instruction.
#define AK_WGMMA16(shape, type, acc, outs, da, db)                                                           \
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned." shape ".f32." type "." type \
               " {" acc "}, %" da ", %" db ", p, 1, 1, 0, 0;\n}\n" : outs : "l"(a), "l"(b))
#define AK_WGMMA_TF32(shape, acc, outs, da, db)                                                              \
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned." shape ".f32.tf32.tf32" \
               " {" acc "}, %" da ", %" db ", p, 1, 1;\n}\n" : outs : "l"(a), "l"(b))

template <int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], unsigned long long a, unsigned long long b, __half) {
  if constexpr (N == 64) AK_WGMMA16("m64n64k16", "f16", WGMMA_ACC64, WGMMA_OUT64, "32", "33");
  else if constexpr (N == 128) AK_WGMMA16("m64n128k16", "f16", WGMMA_ACC128, WGMMA_OUT128, "64", "65");
  else AK_WGMMA16("m64n256k16", "f16", WGMMA_ACC256, WGMMA_OUT256, "128", "129");
}
template <int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], unsigned long long a, unsigned long long b, __nv_bfloat16) {
  if constexpr (N == 64) AK_WGMMA16("m64n64k16", "bf16", WGMMA_ACC64, WGMMA_OUT64, "32", "33");
  else if constexpr (N == 128) AK_WGMMA16("m64n128k16", "bf16", WGMMA_ACC128, WGMMA_OUT128, "64", "65");
  else AK_WGMMA16("m64n256k16", "bf16", WGMMA_ACC256, WGMMA_OUT256, "128", "129");
}
template <int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], unsigned long long a, unsigned long long b, float) {
  if constexpr (N == 64) AK_WGMMA_TF32("m64n64k8", WGMMA_ACC64, WGMMA_OUT64, "32", "33");
  else if constexpr (N == 128) AK_WGMMA_TF32("m64n128k8", WGMMA_ACC128, WGMMA_OUT128, "64", "65");
  else AK_WGMMA_TF32("m64n256k8", WGMMA_ACC256, WGMMA_OUT256, "128", "129");
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

// v rounded to TF32 (nearest, ties away from zero), as the tensor cores take it.
__device__ __forceinline__ float to_tf32(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
  return __uint_as_float(r);
}

// Byte offset of element (row, col) of a block of 128-byte rows in the 128-byte swizzle: the
// 16-byte chunk index XOR the row's index within its group of eight.
template <typename T>
__device__ __forceinline__ int swizzled(int row, int col) {
  const int byte = col * (int)sizeof(T);
  return row * kRowBytes + ((((byte >> 4) ^ row) & 7) << 4) + (byte & 15);
}

// Copies a rows x (128 bytes) block of a row-major matrix (row stride ld, bounds R x C) at
// (r0, c0) into swizzled 128-byte rows, zeros past the edge; 16-byte cp.async chunks when ld
// allows, else element by element.
template <typename T>
__device__ __forceinline__ void load_block(unsigned char* s, int rows, const T* g, int ld, int r0, int c0, int R, int C) {
  constexpr int kCols = kRowBytes / (int)sizeof(T), kVec = 16 / (int)sizeof(T);
  if (ld % kVec == 0) {
    for (int i = threadIdx.x; i < rows * kCols / kVec; i += kThreads) {
      const int r = i / (kCols / kVec), c = (i % (kCols / kVec)) * kVec;
      const int gr = r0 + r, gc = c0 + c;
      const bool in = gr < R && gc < C;   // C % kVec == 0 here: a chunk is whole or absent
      copy16(s + swizzled<T>(r, c), in ? g + (long long)gr * ld + gc : g, in ? 16 : 0);
    }
  } else {
    T zero;
    store_one(&zero, 0.f);
    for (int i = threadIdx.x; i < rows * kCols; i += kThreads) {
      const int r = i / kCols, c = i % kCols;
      const int gr = r0 + r, gc = c0 + c;
      *reinterpret_cast<T*>(s + swizzled<T>(r, c)) = (gr < R && gc < C) ? g[(long long)gr * ld + gc] : zero;
    }
  }
}

// fp32: a landed slice rounded to its big parts in place, its small parts into `small` (the same
// layout, so one descriptor offset serves both).
__device__ __forceinline__ void split_slice(unsigned char* st, unsigned char* small) {
  float4* big4 = reinterpret_cast<float4*>(st);
  float4* small4 = reinterpret_cast<float4*>(small);
  for (int i = threadIdx.x; i < kStage / 16; i += kThreads) {
    const float4 v = big4[i];
    const float4 b = make_float4(to_tf32(v.x), to_tf32(v.y), to_tf32(v.z), to_tf32(v.w));
    big4[i] = b;
    small4[i] = make_float4(to_tf32(v.x - b.x), to_tf32(v.y - b.y), to_tf32(v.z - b.z), to_tf32(v.w - b.w));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
matmul_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y,
              float* __restrict__ workspace, unsigned* tile_counters, int M, int N, int K, int has_bias) {
  constexpr bool kSplit = sizeof(T) == 4;
  constexpr int kTileK = kRowBytes / (int)sizeof(T);   // K per slice
  constexpr int kSteps = kRowBytes / 32;               // instructions per slice: 32 bytes of K each
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);   // swizzle atoms are 1024-aligned
  unsigned char* smalls = smem + AK_STAGES * kStage;

  const int tiles_m = (M + AK_TILE_M - 1) / AK_TILE_M, tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N;
  const int group = blockIdx.x / (AK_GROUP_M * tiles_n);
  const int rows_in_group = min(AK_GROUP_M, tiles_m - group * AK_GROUP_M);
  const int in_group = blockIdx.x % (AK_GROUP_M * tiles_n);
  const int m0 = (group * AK_GROUP_M + in_group % rows_in_group) * AK_TILE_M;
  const int n0 = (in_group / rows_in_group) * AK_TILE_N;
  const int wg = threadIdx.x / 128;

  float acc[AK_TILE_N / 2];
#pragma unroll
  for (int e = 0; e < AK_TILE_N / 2; ++e) acc[e] = 0.f;

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
  // to the stage of slice kt - 2, which every warpgroup has finished by the barrier of step kt;
  // the small buffer of slice kt (kt % 2) was last read by slice kt - 2's batch as well.
  for (int kt = 0; kt < AK_STAGES - 2; ++kt) load_slice(kt);
  for (int kt = 0; kt < k_tiles; ++kt) {
    wait_copies<AK_STAGES - 3>();
    __syncthreads();   // everyone's copies of slice kt; every warpgroup done with slice kt - 2
    load_slice(kt + AK_STAGES - 2);
    unsigned char* st = smem + (kt % AK_STAGES) * kStage;
    unsigned char* small = smalls + (kt % kSmallBuffers) * kStage;
    if constexpr (kSplit) {
      split_slice(st, small);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's writes, seen by wgmma
      __syncthreads();   // everyone's
    } else {
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's copies, seen by wgmma
      __syncthreads();
    }
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      const unsigned long long a = descriptor(st + wg * 64 * kRowBytes + kk * 32), b = descriptor(st + kStageA + kk * 32);
      if constexpr (kSplit) {
        // The small terms first, so that they are not lost against a large running sum.
        wgmma<AK_TILE_N>(acc, descriptor(small + wg * 64 * kRowBytes + kk * 32), b, T());
        wgmma<AK_TILE_N>(acc, a, descriptor(small + kStageA + kk * 32), T());
      }
      wgmma<AK_TILE_N>(acc, a, b, T());
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
  for (int j = 0; j < AK_TILE_N / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + wg * 64 + warp * 16 + lane / 4 + h * 8;
      const int col = n0 + j * 8 + (lane % 4) * 2;
      if (row >= M || col >= N) continue;
      T* p = y + (long long)row * N + col;
      const float v0 = acc[4 * j + 2 * h] + (has_bias ? to_float(bias[col]) : 0.f);
      const float v1 = acc[4 * j + 2 * h + 1] + (has_bias && col + 1 < N ? to_float(bias[col + 1]) : 0.f);
      if (pairs) store_pair(p, v0, v1);
      else {
        store_one(p, v0);
        if (col + 1 < N) store_one(p + 1, v1);
      }
    }
}
