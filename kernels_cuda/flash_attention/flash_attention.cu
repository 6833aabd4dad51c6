// flash_attention starter: o = softmax(q k^T / sqrt(D) [+ causal mask]) v for each (batch, query
// head), like F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True) on
// [B, H, S, D] views given by their strides (contract version 2): Hq query heads over Hkv kv
// heads, query head h reading kv head h / (Hq / Hkv); D a multiple of 16 up to 128; fp32 softmax
// and accumulation, tensor cores (wmma) for both products.
//
// The story of its versions:
//   v0 (this file): one block per AK_BLOCK_Q query rows of one head, one warp per 16 of them. For
//   each AK_BLOCK_KV keys (up to the diagonal when causal): stage k and v in shared memory, S = q k^T on tensor
//   cores into shared memory, the online softmax (running max and sum per row) by the lanes, then
//   O += P v on tensor cores. The running output lives in shared memory in fp32, because wmma does
//   not say which row an accumulator element belongs to, so it is rescaled there each step. Plain
//   on purpose: the loop starts here. Next: keep O in registers with mma.sync, double-buffer k/v
//   with cp.async, schedule the long causal rows first.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half and __nv_bfloat16.
//
// bench: autokernel bench kernels_cuda/flash_attention/flash_attention.cu --kernel flash_attention --dtype fp16
// measured: 13136.47 us median, spread 0.6% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

// The version of the flash_attention contract this file follows (docs/kernel-contract.md).
extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_BLOCK_Q 64    // query rows per block, 16 per warp
#define AK_BLOCK_KV 64   // keys per step (a multiple of 16)
#define AK_VEC 8         // elements per global load (1, 2, 4, 8)

constexpr int kMaxD = 128;
constexpr int kWarps = AK_BLOCK_Q / 16;
constexpr int kThreads = kWarps * 32;
static_assert(AK_BLOCK_Q % 16 == 0 && AK_BLOCK_KV % 16 == 0, "tiles are made of 16x16 fragments");
// Row strides in shared memory, padded against bank conflicts; wmma wants multiples of 8 (16-bit)
// and 4 (fp32) elements.
constexpr int kLdT = kMaxD + 8;          // q, k, v tiles
constexpr int kLdS = AK_BLOCK_KV + 4;    // scores, fp32
constexpr int kLdP = AK_BLOCK_KV + 8;    // probabilities, T
constexpr int kLdO = kMaxD + 4;          // running output, fp32
constexpr int kOffK = AK_BLOCK_Q * kLdT * 2;
constexpr int kOffV = kOffK + AK_BLOCK_KV * kLdT * 2;
constexpr int kOffS = kOffV + AK_BLOCK_KV * kLdT * 2;
constexpr int kOffP = kOffS + AK_BLOCK_Q * kLdS * 4;
constexpr int kOffO = kOffP + AK_BLOCK_Q * kLdP * 2;
constexpr int kOffStats = kOffO + AK_BLOCK_Q * kLdO * 4;
constexpr int kSmem = kOffStats + 2 * AK_BLOCK_Q * 4;

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = AK_BLOCK_Q;  // grid: B * Hq * ceil(S / AK_BLOCK_Q)
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

// Copies `rows` rows of D elements from row r0 of a [S, D] matrix whose rows are `ld` elements
// apart into shared memory (stride kLdT), zero past row S. D and ld are multiples of 8, so
// AK_VEC-wide loads never straddle a row.
template <typename T, int ROWS>
__device__ __forceinline__ void load_rows(T* s, const T* g, int r0, int S, int D, long long ld) {
  const int per_row = D / AK_VEC;
  for (int i = threadIdx.x; i < ROWS * per_row; i += kThreads) {
    const int r = i / per_row, c = (i % per_row) * AK_VEC;
    AkVec<T, AK_VEC> v;
    if (r0 + r < S) {
      v = *reinterpret_cast<const AkVec<T, AK_VEC>*>(g + (long long)(r0 + r) * ld + c);
    } else {
#pragma unroll
      for (int k = 0; k < AK_VEC; ++k) v.v[k] = ak_from_float<T>(0.f);
    }
    *reinterpret_cast<AkVec<T, AK_VEC>*>(s + r * kLdT + c) = v;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
flash_attention_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                       int B, int Hq, int Hkv, int S, int D, int causal,
                       int q_stride_batch, int q_stride_head, int q_stride_seq,
                       int k_stride_batch, int k_stride_head, int k_stride_seq,
                       int v_stride_batch, int v_stride_head, int v_stride_seq,
                       int o_stride_batch, int o_stride_head, int o_stride_seq) {
  using namespace nvcuda;
  if (D > kMaxD || D % 16 != 0) __trap();  // outside what this file handles: fail loudly
  extern __shared__ __align__(128) unsigned char smem[];
  T* Qs = reinterpret_cast<T*>(smem);
  T* Ks = reinterpret_cast<T*>(smem + kOffK);
  T* Vs = reinterpret_cast<T*>(smem + kOffV);
  float* Ss = reinterpret_cast<float*>(smem + kOffS);
  T* Ps = reinterpret_cast<T*>(smem + kOffP);
  float* Os = reinterpret_cast<float*>(smem + kOffO);
  float* row_max = reinterpret_cast<float*>(smem + kOffStats);
  float* row_sum = row_max + AK_BLOCK_Q;

  const int q_tiles = (S + AK_BLOCK_Q - 1) / AK_BLOCK_Q;
  const long long head = blockIdx.x / q_tiles;   // b * Hq + h
  const int q0 = (blockIdx.x % q_tiles) * AK_BLOCK_Q;
  const long long b = head / Hq, h = head % Hq, hk = h / (Hq / Hkv);   // query head h reads kv head hk
  const T* qh = q + b * q_stride_batch + h * q_stride_head;
  const T* kh = k + b * k_stride_batch + hk * k_stride_head;
  const T* vh = v + b * v_stride_batch + hk * v_stride_head;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wrow = warp * 16;
  // Two lanes per row of the warp's 16: each takes half of the keys of a step and half of D.
  const int my_row = wrow + lane / 2, half = lane % 2;
  const int my_query = q0 + my_row;
  const float scale = rsqrtf(float(D));

  load_rows<T, AK_BLOCK_Q>(Qs, qh, q0, S, D, q_stride_seq);
  for (int i = threadIdx.x; i < AK_BLOCK_Q * kMaxD; i += kThreads) Os[(i / kMaxD) * kLdO + i % kMaxD] = 0.f;
  for (int i = threadIdx.x; i < AK_BLOCK_Q; i += kThreads) {
    row_max[i] = __int_as_float(0xff800000);  // -inf; NVRTC has no INFINITY macro
    row_sum[i] = 0.f;
  }

  const int kv_end = causal ? min(S, q0 + AK_BLOCK_Q) : S;  // causal: no key past the block's last query
  for (int kv0 = 0; kv0 < kv_end; kv0 += AK_BLOCK_KV) {
    __syncthreads();  // every warp is done with the previous k and v
    load_rows<T, AK_BLOCK_KV>(Ks, kh, kv0, S, D, k_stride_seq);
    load_rows<T, AK_BLOCK_KV>(Vs, vh, kv0, S, D, v_stride_seq);
    __syncthreads();

    // S = q k^T for this warp's 16 rows.
    for (int jj = 0; jj < AK_BLOCK_KV; jj += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
      for (int dd = 0; dd < D; dd += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fq;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fk;  // k^T: k's rows are its columns
        wmma::load_matrix_sync(fq, Qs + wrow * kLdT + dd, kLdT);
        wmma::load_matrix_sync(fk, Ks + jj * kLdT + dd, kLdT);
        wmma::mma_sync(acc, fq, fk, acc);
      }
      wmma::store_matrix_sync(Ss + wrow * kLdS + jj, acc, kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // The online softmax: new running max, probabilities of this step, rescale of the old sum
    // and output. A masked key (past the diagonal when causal, or past S) has probability zero.
    constexpr int kHalfKV = AK_BLOCK_KV / 2;
    float m_step = __int_as_float(0xff800000);
    for (int c = half * kHalfKV; c < (half + 1) * kHalfKV; ++c) {
      const int j = kv0 + c;
      if ((!causal || j <= my_query) && j < S) m_step = fmaxf(m_step, Ss[my_row * kLdS + c] * scale);
    }
    m_step = fmaxf(m_step, __shfl_xor_sync(0xffffffffu, m_step, 1));
    const float m_old = row_max[my_row];
    const float m_new = fmaxf(m_old, m_step);
    float sum = 0.f;
    for (int c = half * kHalfKV; c < (half + 1) * kHalfKV; ++c) {
      const int j = kv0 + c;
      const float p = ((!causal || j <= my_query) && j < S) ? expf(Ss[my_row * kLdS + c] * scale - m_new) : 0.f;
      Ps[my_row * kLdP + c] = ak_from_float<T>(p);
      sum += p;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    const float alpha = expf(m_old - m_new);  // 0 on the first step: m_old is -inf
    for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d) Os[my_row * kLdO + d] *= alpha;
    __syncwarp();
    if (half == 0) {
      row_sum[my_row] = row_sum[my_row] * alpha + sum;
      row_max[my_row] = m_new;
    }

    // O += P v for this warp's 16 rows.
    for (int dd = 0; dd < D; dd += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, Os + wrow * kLdO + dd, kLdO, wmma::mem_row_major);
      for (int jj = 0; jj < AK_BLOCK_KV; jj += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fp;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fv;
        wmma::load_matrix_sync(fp, Ps + wrow * kLdP + jj, kLdP);
        wmma::load_matrix_sync(fv, Vs + jj * kLdT + dd, kLdT);
        wmma::mma_sync(acc, fp, fv, acc);
      }
      wmma::store_matrix_sync(Os + wrow * kLdO + dd, acc, kLdO, wmma::mem_row_major);
    }
    __syncwarp();
  }

  if (my_query < S) {
    const float inv = 1.f / row_sum[my_row];
    T* orow = o + b * o_stride_batch + h * o_stride_head + (long long)my_query * o_stride_seq;
    for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d) orow[d] = ak_from_float<T>(Os[my_row * kLdO + d] * inv);
  }
}
