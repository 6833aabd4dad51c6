// matmul starter: c[m, n] = sum_k a[m, k] b[k, n], like torch.matmul(a, b) on row-major a[M, K]
// and b[K, N], fp32 accumulation on tensor cores (wmma, 16x16x16 fragments).
//
// The story of its versions:
//   v0: one block per AK_TILE_M x AK_TILE_N tile of c, AK_WARPS_M x AK_WARPS_N warps, each warp a
//   grid of 16x16 fragments; each step staged an AK_TILE_K slice of a and b in shared memory
//   through registers, synced, multiplied, synced. 2249 us at 4096^3 fp16 on an H100 (61 TFLOPS).
//   v1 (this file): the same, but the slices travel with cp.async, global to shared memory
//   without the register round trip: 1067 us (129 TFLOPS) with one stage. AK_STAGES > 1 keeps
//   the next slices in flight while the tensor cores work on the current one. Still plain: no
//   swizzle, no register-level double buffering, wmma rather than mma.sync or wgmma. The
//   accumulator goes through shared memory on its way out, so any M, N, K works.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half and __nv_bfloat16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_TILE_M 64   // rows of c per block (a multiple of 16 * AK_WARPS_M)
#define AK_TILE_N 64   // columns of c per block (a multiple of 16 * AK_WARPS_N)
#define AK_TILE_K 32   // depth of one shared-memory step (a multiple of 16)
#define AK_WARPS_M 2   // warps along M
#define AK_WARPS_N 2   // warps along N
#define AK_VEC 8       // elements per global load (1, 2, 4, 8); scalar where a row length is not a multiple
#define AK_STAGES 1    // shared-memory stages: 1 loads then computes; 2 or more prefetch with cp.async

constexpr int kThreads = AK_WARPS_M * AK_WARPS_N * 32;
constexpr int kWarpM = AK_TILE_M / AK_WARPS_M;
constexpr int kWarpN = AK_TILE_N / AK_WARPS_N;
constexpr int kFragM = kWarpM / 16;
constexpr int kFragN = kWarpN / 16;
static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0 && AK_TILE_K % 16 == 0, "tiles are made of 16x16 fragments");
static_assert(kThreads <= 1024, "too many warps for one block");
// Row strides in shared memory, padded against bank conflicts; wmma wants multiples of 8 (16-bit)
// and 4 (fp32) elements.
constexpr int kLdA = AK_TILE_K + 8;
constexpr int kLdB = AK_TILE_N + 8;
constexpr int kLdC = AK_TILE_N + 4;
constexpr int kSmemAB = (AK_TILE_M * kLdA + AK_TILE_K * kLdB) * 2;
constexpr int kSmemC = AK_TILE_M * kLdC * 4;
constexpr int kStageElems = AK_TILE_M * kLdA + AK_TILE_K * kLdB;  // one stage's slices of a and b
constexpr int kSmem = kSmemAB * AK_STAGES > kSmemC ? kSmemAB * AK_STAGES : kSmemC;
static_assert(AK_STAGES >= 1, "at least one stage");

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = AK_TILE_M;
extern "C" __constant__ int ak_tile_n = AK_TILE_N;
extern "C" __constant__ int ak_smem_bytes = kSmem;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T, int N>
struct alignas(sizeof(T) * N) AkVec {
  T v[N];
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
  constexpr int kBytes = AK_VEC * (int)sizeof(T);
  const T zero = ak_from_float<T>(0.f);
  if (AK_VEC > 1 && kBytes >= 4 && ld % AK_VEC == 0) {
    for (int i = threadIdx.x; i < ROWS * COLS / AK_VEC; i += kThreads) {
      const int r = i / (COLS / AK_VEC), c = (i % (COLS / AK_VEC)) * AK_VEC;
      if (r0 + r < R && c0 + c < C) {
        copy_async<kBytes>(s + r * lds + c, g + (long long)(r0 + r) * ld + c0 + c);
      } else {
#pragma unroll
        for (int k = 0; k < AK_VEC; ++k) s[r * lds + c + k] = zero;
      }
    }
  } else {
    for (int i = threadIdx.x; i < ROWS * COLS; i += kThreads) {
      const int r = i / COLS, c = i % COLS;
      s[r * lds + c] = (r0 + r < R && c0 + c < C) ? g[(long long)(r0 + r) * ld + c0 + c] : zero;
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
matmul_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem[];
  T* stages = reinterpret_cast<T*>(smem);
  float* Cs = reinterpret_cast<float*>(smem);  // reused once the main loop is done

  const int tiles_n = (N + AK_TILE_N - 1) / AK_TILE_N;
  const int m0 = (blockIdx.x / tiles_n) * AK_TILE_M, n0 = (blockIdx.x % tiles_n) * AK_TILE_N;
  const int warp = threadIdx.x / 32;
  const int wm = (warp / AK_WARPS_N) * kWarpM, wn = (warp % AK_WARPS_N) * kWarpN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragM][kFragN];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  // Slice kt of a and b goes to stage kt % AK_STAGES; one commit group per slice (empty past the
  // end), so waiting for all but the newest AK_STAGES - 1 groups means slice kt has landed.
  const int k_tiles = (K + AK_TILE_K - 1) / AK_TILE_K;
  auto load_slice = [&](int kt) {
    if (kt < k_tiles) {
      T* As = stages + (kt % AK_STAGES) * kStageElems;
      load_tile<T, AK_TILE_M, AK_TILE_K>(As, kLdA, a, K, m0, kt * AK_TILE_K, M, K);
      load_tile<T, AK_TILE_K, AK_TILE_N>(As + AK_TILE_M * kLdA, kLdB, b, N, kt * AK_TILE_K, n0, K, N);
    }
    commit_copies();
  };
  for (int kt = 0; kt < AK_STAGES - 1; ++kt) load_slice(kt);
  for (int kt = 0; kt < k_tiles; ++kt) {
    load_slice(kt + AK_STAGES - 1);
    wait_copies<AK_STAGES - 1>();
    __syncthreads();
    const T* As = stages + (kt % AK_STAGES) * kStageElems;
    const T* Bs = As + AK_TILE_M * kLdA;
#pragma unroll
    for (int kk = 0; kk < AK_TILE_K; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[kFragM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[kFragN];
#pragma unroll
      for (int i = 0; i < kFragM; ++i) wmma::load_matrix_sync(fa[i], As + (wm + i * 16) * kLdA + kk, kLdA);
#pragma unroll
      for (int j = 0; j < kFragN; ++j) wmma::load_matrix_sync(fb[j], Bs + kk * kLdB + wn + j * 16, kLdB);
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < kFragN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
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
    if (m0 + r < M && n0 + col < N) c[(long long)(m0 + r) * N + n0 + col] = ak_from_float<T>(Cs[r * kLdC + col]);
  }
}
