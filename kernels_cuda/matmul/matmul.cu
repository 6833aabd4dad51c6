// matmul starter: y[m, n] = sum_k x[m, k] w[n, k] (+ bias[n]), as torch.nn.Linear computes it on
// row-major x[M, K] and the Linear's weight w[N, K]; fp32 accumulation on tensor cores (wmma).
//
// The story of its versions:
//   v0: one block per AK_TILE_M x AK_TILE_N tile of c, AK_WARPS_M x AK_WARPS_N warps, each warp a
//   grid of 16x16 fragments; each step staged an AK_TILE_K slice of a and b in shared memory
//   through registers, synced, multiplied, synced. 2249 us at 4096^3 fp16 on an H100 (61 TFLOPS).
//   v1: the same, but the slices travel with cp.async, global to shared memory without the
//   register round trip: 1067 us (129 TFLOPS) with one stage. AK_STAGES > 1 keeps the next slices
//   in flight while the tensor cores work on the current one.
//   v2 (this file, contract version 2): w as a Linear stores it, [N, K]: its slice is staged like
//   x's (K-contiguous rows) and read as wmma's column-major b; the bias is added in the epilogue
//   where has_bias says so. fp32 joins fp16 and bf16, at fp32 accuracy on the tensor cores: each
//   operand is split into a TF32 "big" part and the TF32 rounding of what big leaves out
//   ("small"), and the product is big*big + big*small + small*big (small*small is below fp32's
//   precision), three tf32 wmma steps accumulated in fp32.
// Still plain: no swizzle, no register-level double buffering, wmma rather than mma.sync or
// wgmma, fp32 far from the tensor cores. The accumulator goes through shared memory on its way out, so any M, N, K works.
//
// workspace (fp32, shaped as y, undefined at every launch) and tile_counters (zero at every
// launch, to be left zero) are the contract's room for split-K and stream-K; unused here.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/matmul/matmul.cu --kernel matmul --dtype fp16
// measured: 1043.81 us median, spread 0.9% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 64   // rows of y per block (a multiple of 16 * AK_WARPS_M)
#define AK_TILE_N 64   // columns of y per block (a multiple of 16 * AK_WARPS_N)
#define AK_TILE_K 32   // depth of one shared-memory step (a multiple of 16)
#define AK_WARPS_M 2   // warps along M
#define AK_WARPS_N 2   // warps along N
#define AK_VEC 8       // elements per global load (1, 2, 4, 8; at most 16 bytes); scalar where a row length is not a multiple
#define AK_STAGES 1    // shared-memory stages: 1 loads then computes; 2 or more prefetch with cp.async

constexpr int kThreads = AK_WARPS_M * AK_WARPS_N * 32;
constexpr int kWarpM = AK_TILE_M / AK_WARPS_M;
constexpr int kWarpN = AK_TILE_N / AK_WARPS_N;
constexpr int kFragM = kWarpM / 16;
constexpr int kFragN = kWarpN / 16;
static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0 && AK_TILE_K % 16 == 0, "tiles are made of 16x16 fragments");
static_assert(kThreads <= 1024, "too many warps for one block");
// Row stride in shared memory (x's and w's slices alike: K-contiguous rows), padded against bank
// conflicts; wmma wants multiples of 8 (16-bit) and 4 (fp32) elements and 32-byte aligned rows.
constexpr int kLd = AK_TILE_K + 8;
constexpr int kLdC = AK_TILE_N + 4;
constexpr int kStageElems = (AK_TILE_M + AK_TILE_N) * kLd;   // one stage's slices of x and w
// Sized for the widest element (fp32): the module's shared memory is one number for every dtype.
constexpr int kSmemStages = kStageElems * 4 * AK_STAGES;
constexpr int kSmemC = AK_TILE_M * kLdC * 4;
// fp32's path (plain_fp32_tile): slices of kPlainK along K of a piece of kPlainRows x 64 outputs.
constexpr int kPlainK = 16;
constexpr int kPlainRows = kThreads / 4;
constexpr int kPlainLdX = kPlainRows + 4;   // float4 rows: multiples of 4 floats
constexpr int kPlainLdW = 64 + 4;
constexpr int kPlainSmem = kPlainK * (kPlainLdX + kPlainLdW) * 4;
constexpr int kSmem16 = kSmemStages > kSmemC ? kSmemStages : kSmemC;
constexpr int kSmem = kSmem16 > kPlainSmem ? kSmem16 : kPlainSmem;
static_assert(AK_STAGES >= 1, "at least one stage");
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have (sized for fp32)");

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = AK_TILE_M;
extern "C" __constant__ int ak_tile_n = AK_TILE_N;
extern "C" __constant__ int ak_smem_bytes = kSmem;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

// Elements per global load: AK_VEC, but no more than 16 bytes (cp.async's widest copy).
template <typename T>
struct VecOf {
  static constexpr int value = AK_VEC * (int)sizeof(T) > 16 ? 16 / (int)sizeof(T) : AK_VEC;
};

// cp.async: a global-to-shared copy that does not pass through registers, so the next slices
// load while the tensor cores work (sm_80 and later).
template <int BYTES>
__device__ __forceinline__ void copy_async(void* dst, const void* src) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  if constexpr (BYTES == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
  else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"(BYTES));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Copies rows x cols of a row-major matrix (row stride ld) starting at (r0, c0) into shared memory
// (row stride lds), zero where it runs past (R, C). Wide loads go through cp.async (waited for
// by the caller); scalar ones are plain stores.
template <typename T, int ROWS, int COLS>
__device__ __forceinline__ void load_tile(T* s, int lds, const T* g, long long ld, int r0, int c0, int R, int C) {
  constexpr int kVec = VecOf<T>::value;
  constexpr int kBytes = kVec * (int)sizeof(T);
  const T zero = ak_from_float<T>(0.f);
  if (kVec > 1 && kBytes >= 4 && ld % kVec == 0) {
    for (int i = threadIdx.x; i < ROWS * COLS / kVec; i += kThreads) {
      const int r = i / (COLS / kVec), c = (i % (COLS / kVec)) * kVec;
      if (r0 + r < R && c0 + c < C) {
        copy_async<kBytes>(s + r * lds + c, g + (long long)(r0 + r) * ld + c0 + c);
      } else {
#pragma unroll
        for (int k = 0; k < kVec; ++k) s[r * lds + c + k] = zero;
      }
    }
  } else {
    for (int i = threadIdx.x; i < ROWS * COLS; i += kThreads) {
      const int r = i / COLS, c = i % COLS;
      s[r * lds + c] = (r0 + r < R && c0 + c < C) ? g[(long long)(r0 + r) * ld + c0 + c] : zero;
    }
  }
}

using namespace nvcuda;

// One AK_TILE_K slice of x (xs, rows of the tile) times w (ws, rows = columns of y) into the
// warp's accumulators: 16-bit elements in 16x16x16 steps.
template <typename T>
__device__ __forceinline__ void multiply_slice(wmma::fragment<wmma::accumulator, 16, 16, 16, float> (&acc)[kFragM][kFragN],
                                               const T* xs, const T* ws, int wm, int wn) {
#pragma unroll
  for (int kk = 0; kk < AK_TILE_K; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[kFragM];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[kFragN];
#pragma unroll
    for (int i = 0; i < kFragM; ++i) wmma::load_matrix_sync(fa[i], xs + (wm + i * 16) * kLd + kk, kLd);
#pragma unroll
    for (int j = 0; j < kFragN; ++j) wmma::load_matrix_sync(fb[j], ws + (wn + j * 16) * kLd + kk, kLd);
#pragma unroll
    for (int i = 0; i < kFragM; ++i)
#pragma unroll
      for (int j = 0; j < kFragN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
  }
}

// fp32: CUDA-core FMAs along K in order, each output's sum exactly as the reference kernel forms
// it (from 0, one fmaf per k, then the bias), so the result is the reference's to the bit. Split
// TF32 on the tensor cores cannot pass fp32's check: where one row's huge product cancels (the
// one-huge-per-row inputs), the reference's own fp32 rounding lies 6 to 17 times the tolerance
// from the exact sum (tests/kernels_cuda/split_tf32_test.cpp), so only its own order agrees.
// A piece of kPlainRows x 64 outputs at a time: 16 threads across its 64 columns, kThreads / 16
// down its rows, each thread a 4 x 4 block; slices of kPlainK along K staged in shared memory.
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

// fp16 and bf16: wmma 16x16x16 steps from cp.async stages.
template <typename T>
__device__ void tensor_core_tile(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                 T* __restrict__ y, int M, int N, int K, int has_bias, int m0, int n0, unsigned char* smem) {
  T* stages = reinterpret_cast<T*>(smem);
  float* Cs = reinterpret_cast<float*>(smem);  // reused once the main loop is done

  const int warp = threadIdx.x / 32;
  const int wm = (warp / AK_WARPS_N) * kWarpM, wn = (warp % AK_WARPS_N) * kWarpN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragM][kFragN];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  // Slice kt of x and w goes to stage kt % AK_STAGES; one commit group per slice (empty past the
  // end), so waiting for all but the newest AK_STAGES - 1 groups means slice kt has landed.
  const int k_tiles = (K + AK_TILE_K - 1) / AK_TILE_K;
  auto load_slice = [&](int kt) {
    if (kt < k_tiles) {
      T* xs = stages + (kt % AK_STAGES) * kStageElems;
      load_tile<T, AK_TILE_M, AK_TILE_K>(xs, kLd, x, K, m0, kt * AK_TILE_K, M, K);
      load_tile<T, AK_TILE_N, AK_TILE_K>(xs + AK_TILE_M * kLd, kLd, w, K, n0, kt * AK_TILE_K, N, K);
    }
    commit_copies();
  };
  for (int kt = 0; kt < AK_STAGES - 1; ++kt) load_slice(kt);
  for (int kt = 0; kt < k_tiles; ++kt) {
    load_slice(kt + AK_STAGES - 1);
    wait_copies<AK_STAGES - 1>();
    __syncthreads();
    const T* xs = stages + (kt % AK_STAGES) * kStageElems;
    multiply_slice(acc, xs, xs + AK_TILE_M * kLd, wm, wn);
    __syncthreads();  // every warp is done with this stage before it is loaded again
  }
  wait_copies<0>();
  __syncthreads();

#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j)
      wmma::store_matrix_sync(Cs + (wm + i * 16) * kLdC + wn + j * 16, acc[i][j], kLdC, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < AK_TILE_M * AK_TILE_N; i += kThreads) {
    const int r = i / AK_TILE_N, col = i % AK_TILE_N;
    if (m0 + r < M && n0 + col < N) {
      const float v = Cs[r * kLdC + col] + (has_bias ? ak_to_float(bias[n0 + col]) : 0.f);
      y[(long long)(m0 + r) * N + n0 + col] = ak_from_float<T>(v);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
matmul_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y,
              float* __restrict__ workspace, unsigned* tile_counters, int M, int N, int K, int has_bias) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N;
  const int m0 = (blockIdx.x / tiles_n) * AK_TILE_M, n0 = (blockIdx.x % tiles_n) * AK_TILE_N;
  if constexpr (sizeof(T) == 4) plain_fp32_tile(x, w, bias, y, M, N, K, has_bias, m0, n0, reinterpret_cast<float*>(smem));
  else tensor_core_tile<T>(x, w, bias, y, M, N, K, has_bias, m0, n0, smem);
}
