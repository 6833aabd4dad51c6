// rotary_embedding starter: RoPE with the rotate-half convention on q and k in one launch, as an
// attention layer has them: for each head vector x of q [batch, q_heads, seq, head_dim] and of
// k [batch, k_heads, seq, head_dim] (k_heads < q_heads under grouped-query attention), at
// position s of batch b, with c = cos[b, s, :] and sn = sin[b, s, :] and H = head_dim / 2,
//   out[d]     = x[d] * c[d] - x[d + H] * sn[d]
//   out[d + H] = x[d + H] * c[d + H] + x[d] * sn[d + H]          for d < H,
// which is `x * cos + rotate_half(x) * sin` exactly, whatever cos and sin hold, in fp32.
//
// Every tensor arrives with its element strides (batch, head, seq; head_dim's is 1): q and k are
// usually transposed views of the projections' [batch, seq, heads, head_dim] output, or slices of
// one fused qkv row, and the outputs take the strides the model's own code would give them. One
// cos/sin table may serve every batch (table_stride_batch 0).
//
// The story of its versions:
//   v0 (contract version 1): q alone, contiguous, cos and sin [seq, head_dim / 2]; a model's q and
//   k were copied to contiguous tensors first and rotated in two launches.
//   v1 (this file, contract version 2): q and k where they lie, one launch; one group of threads
//   per row, AK_VEC pairs per load when every stride and base allows it, scalar otherwise.
//   Plain on purpose: tuning walks the knobs below first (threads, rows per block, vector width).
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/rotary_embedding/rotary_embedding.cu --kernel rotary_embedding --dtype fp16
// measured: 280.38 us median, spread 0.4% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_THREADS 128         // threads per block
#define AK_ROWS_PER_BLOCK 1    // rows one block rotates; each gets AK_THREADS / AK_ROWS_PER_BLOCK threads
#define AK_VEC 1               // pairs per load/store (1, 2, 4, 8); scalar when the layout does not allow it

// ---- the contract this file follows, and its launch geometry, read by the harness ----
extern "C" __constant__ int ak_contract_version = 2;
extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_rows_per_block = AK_ROWS_PER_BLOCK;
extern "C" __constant__ int ak_smem_bytes = 0;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T, int N>
struct alignas(sizeof(T) * N) AkVec {
  T v[N];
};

/// Where one row's vectors lie: the input, the output and the row's cos and sin.
template <typename T>
struct AkRow {
  const T* x;
  T* y;
  const T* c;
  const T* sn;
};

/// Rows are q's head vectors first, then k's, each in (batch, seq, head) order: neighbouring rows
/// are neighbours in memory for the projections' usual [batch, seq, heads, head_dim].
template <typename T>
__device__ __forceinline__ AkRow<T> ak_row(long long row, const T* q, const T* k, const T* cos, const T* sin, T* q_out,
                                           T* k_out, int batch, int q_heads, int k_heads, int seq, const int* st) {
  const long long q_rows = (long long)batch * seq * q_heads;
  const bool is_q = row < q_rows;
  const long long r = is_q ? row : row - q_rows;
  const int heads = is_q ? q_heads : k_heads;
  const long long h = r % heads, s = r / heads % seq, b = r / heads / seq;
  const int* in = st + (is_q ? 0 : 3);    // q's strides, then k's
  const int* out = st + (is_q ? 6 : 9);   // q_out's, then k_out's
  AkRow<T> w;
  w.x = (is_q ? q : k) + b * in[0] + h * in[1] + s * in[2];
  w.y = (is_q ? q_out : k_out) + b * out[0] + h * out[1] + s * out[2];
  w.c = cos + b * st[12] + s * st[13];
  w.sn = sin + b * st[12] + s * st[13];
  return w;
}

template <typename T, int W>
__device__ __forceinline__ void ak_rotate(const AkRow<T>& w, int half, int lane, int lanes) {
  using V = AkVec<T, W>;
  for (int i = lane; i < half / W; i += lanes) {
    const V a = reinterpret_cast<const V*>(w.x)[i], b = reinterpret_cast<const V*>(w.x + half)[i];
    const V c1 = reinterpret_cast<const V*>(w.c)[i], c2 = reinterpret_cast<const V*>(w.c + half)[i];
    const V s1 = reinterpret_cast<const V*>(w.sn)[i], s2 = reinterpret_cast<const V*>(w.sn + half)[i];
    V lo, hi;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float x1 = ak_to_float(a.v[j]), x2 = ak_to_float(b.v[j]);
      lo.v[j] = ak_from_float<T>(x1 * ak_to_float(c1.v[j]) - x2 * ak_to_float(s1.v[j]));
      hi.v[j] = ak_from_float<T>(x2 * ak_to_float(c2.v[j]) + x1 * ak_to_float(s2.v[j]));
    }
    reinterpret_cast<V*>(w.y)[i] = lo;
    reinterpret_cast<V*>(w.y + half)[i] = hi;
  }
}

/// Whether W pairs can move as one vector: every base aligned and every stride a multiple of W.
template <typename T, int W>
__device__ __forceinline__ bool ak_vectorizable(const void* const* bases, const int* strides, int half) {
  if (W == 1) return true;
  if (half % W) return false;
  for (int i = 0; i < 6; ++i)
    if (reinterpret_cast<unsigned long long>(bases[i]) % (sizeof(T) * W)) return false;
  for (int i = 0; i < 14; ++i)
    if (strides[i] % W) return false;
  return true;
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
rotary_embedding_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ cos,
                        const T* __restrict__ sin, T* __restrict__ q_out, T* __restrict__ k_out, int batch,
                        int q_heads, int k_heads, int seq, int head_dim, int q_stride_batch, int q_stride_head,
                        int q_stride_seq, int k_stride_batch, int k_stride_head, int k_stride_seq,
                        int q_out_stride_batch, int q_out_stride_head, int q_out_stride_seq, int k_out_stride_batch,
                        int k_out_stride_head, int k_out_stride_seq, int table_stride_batch, int table_stride_seq) {
  constexpr int kRowThreads = AK_THREADS / AK_ROWS_PER_BLOCK;
  const int st[14] = {q_stride_batch,     q_stride_head,     q_stride_seq,     k_stride_batch,     k_stride_head,
                      k_stride_seq,       q_out_stride_batch, q_out_stride_head, q_out_stride_seq, k_out_stride_batch,
                      k_out_stride_head,  k_out_stride_seq,  table_stride_batch, table_stride_seq};
  const long long rows = (long long)batch * (q_heads + k_heads) * seq;
  const long long row = (long long)blockIdx.x * AK_ROWS_PER_BLOCK + threadIdx.x / kRowThreads;
  if (row >= rows) return;  // no block-wide synchronization in this kernel
  const int half = head_dim / 2, lane = threadIdx.x % kRowThreads;
  const AkRow<T> w = ak_row(row, q, k, cos, sin, q_out, k_out, batch, q_heads, k_heads, seq, st);
  const void* bases[6] = {q, k, cos, sin, q_out, k_out};
  if (ak_vectorizable<T, AK_VEC>(bases, st, half)) ak_rotate<T, AK_VEC>(w, half, lane, kRowThreads);
  else ak_rotate<T, 1>(w, half, lane, kRowThreads);
}
