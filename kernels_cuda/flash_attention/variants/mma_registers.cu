// flash_attention variant mma_registers: FlashAttention-2 on mma.sync, scores and output in registers, k/v double-buffered with cp.async
//
// What it changes and why: the starter keeps the running output in shared memory in fp32 and
// rescales it there every step, because wmma does not say which row an accumulator element
// belongs to; that traffic, not the tensor cores, sets its pace. Here each warp owns
// AK_WARP_ROWS query rows (one or two 16-row tiles) and issues mma.sync.m16n8k16 itself, so it
// knows the layout: each k and v fragment loaded from shared memory (ldmatrix) serves every row
// tile of the warp, which matters because those loads, not the tensor cores, are what an
// mma.sync attention runs out of first; q is read from shared memory as A fragments, the
// scores S = q k^T land in registers, the online softmax (running max and sum per row, exp2
// with the scale folded in) works on them where they are, and
// the probabilities are packed to T in place as the A fragments of P v, the register layout of
// an m16n8 accumulator pair being that of an m16k16 operand. The output accumulates in
// registers and is divided by the row sums once, at the end. k and v tiles are loaded with
// cp.async into one stage while the other is used. The query tiles of one head are neighbours in
// the grid, so the blocks running side by side share that head's k and v through L2 instead of
// each fetching another head's from HBM; within a head, the tiles with the most keys (the causal
// mask's long rows) start first.
//
// Contract version 2: query head h reads kv head h / (Hq / Hkv), and q, k, v, o are read and
// written through their strides (a projection's [B, S, H, D] rows or contiguous heads alike: only
// the distance between two positions of one head changes), so the query heads of one kv head,
// neighbours in the grid, also share their k and v through L2. Without the causal flag every tile
// reads every key and only keys past S are masked.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half and __nv_bfloat16.
//
// bench: autokernel bench kernels_cuda/flash_attention/variants/mma_registers.cu --kernel flash_attention --dtype fp16
// measured: 2808.39 us median, spread 1.1% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// The version of the flash_attention contract this file follows (docs/kernel-contract.md).
extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_BLOCK_Q 128   // query rows per block
#define AK_BLOCK_KV 64   // keys per step (a multiple of 16)
#define AK_WARP_ROWS 32  // query rows per warp (16 or 32): more rows share each load of k and v

constexpr int kMaxD = 128;
constexpr int kWarps = AK_BLOCK_Q / AK_WARP_ROWS;
constexpr int kThreads = kWarps * 32;
constexpr int kTiles = AK_WARP_ROWS / 16;   // 16-row tiles per warp
static_assert(AK_BLOCK_KV % 16 == 0 && AK_WARP_ROWS % 16 == 0 && AK_BLOCK_Q % AK_WARP_ROWS == 0, "tiles are made of 16-row steps");
static_assert(AK_WARP_ROWS <= 32, "at most two 16-row tiles per warp: their accumulators live in registers");
static_assert(kThreads <= 1024, "too many warps for one block");
// q, then two stages of (k, v); rows padded by 16 bytes so ldmatrix's eight rows hit different banks.
constexpr int kSmem = (AK_BLOCK_Q + 4 * AK_BLOCK_KV) * (kMaxD + 8) * 2;

// ---- launch geometry, read by the harness from the compiled module ----
extern "C" __constant__ int ak_block_threads = kThreads;
extern "C" __constant__ int ak_tile_m = AK_BLOCK_Q;  // grid: B * Hq * ceil(S / AK_BLOCK_Q)
extern "C" __constant__ int ak_smem_bytes = kSmem;

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void copy16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, __half) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, __nv_bfloat16) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned pack(float x, float y, __half) {
  __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ unsigned pack(float x, float y, __nv_bfloat16) {
  __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<unsigned*>(&h);
}

// Element strides of one [B, heads, S, D] operand.
struct AkStrides {
  long long batch, head, seq;
};

// ROWS rows of D elements from row r0 of a [S, D] matrix whose rows are `ld` elements apart into
// shared memory (row stride D + 8), zeros past row S, 16 bytes per cp.async.
template <typename T, int D, int ROWS>
__device__ __forceinline__ void load_rows(T* s, const T* g, int r0, int S, long long ld) {
  constexpr int kChunks = D / 8;
  for (int i = threadIdx.x; i < ROWS * kChunks; i += kThreads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const bool in = r0 + r < S;
    copy16(s + r * (D + 8) + c, in ? g + (long long)(r0 + r) * ld + c : g, in ? 16 : 0);
  }
}

template <typename T, int D>
__device__ __forceinline__ void attend(const T* q, const T* k, const T* v, T* o, int Hq, int Hkv, int S, bool causal,
                                       AkStrides qs, AkStrides ks, AkStrides vs, AkStrides os, unsigned char* smem) {
  constexpr int kLd = D + 8;
  constexpr int kSFrags = AK_BLOCK_KV / 8;   // n8 fragments of scores per 16 rows
  constexpr int kOFrags = D / 8;             // n8 fragments of output per 16 rows
  const float neg_inf = __int_as_float(0xff800000);
  T* Qs = reinterpret_cast<T*>(smem);
  T* KV = Qs + AK_BLOCK_Q * kLd;

  // Head-major, the longest causal rows of each head first.
  const int q_tiles = (S + AK_BLOCK_Q - 1) / AK_BLOCK_Q;
  const long long head = blockIdx.x / q_tiles;   // b * Hq + h
  const int q0 = (q_tiles - 1 - (int)(blockIdx.x % q_tiles)) * AK_BLOCK_Q;
  const long long b = head / Hq, hq = head % Hq, hk = hq / (Hq / Hkv);   // query head hq reads kv head hk
  const T* qh = q + b * qs.batch + hq * qs.head;
  const T* kh = k + b * ks.batch + hk * ks.head;
  const T* vh = v + b * vs.batch + hk * vs.head;
  T* oh = o + b * os.batch + hq * os.head;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wq0 = q0 + warp * AK_WARP_ROWS;   // this warp's first query row
  // Tile mt of this warp holds rows wq0 + 16 mt + lane / 4 and 8 below, in this lane.

  load_rows<T, D, AK_BLOCK_Q>(Qs, qh, q0, S, qs.seq);
  commit_copies();
  const int kv_end = causal ? min(S, q0 + AK_BLOCK_Q) : S;   // causal: no key past the block's last query
  const int kv_tiles = (kv_end + AK_BLOCK_KV - 1) / AK_BLOCK_KV;
  auto load_kv = [&](int t) {
    if (t < kv_tiles) {
      T* Ks = KV + (t & 1) * 2 * AK_BLOCK_KV * kLd;
      load_rows<T, D, AK_BLOCK_KV>(Ks, kh, t * AK_BLOCK_KV, S, ks.seq);
      load_rows<T, D, AK_BLOCK_KV>(Ks + AK_BLOCK_KV * kLd, vh, t * AK_BLOCK_KV, S, vs.seq);
    }
    commit_copies();
  };
  load_kv(0);

  float acc[kTiles][kOFrags][4];
#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
    for (int n = 0; n < kOFrags; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][n][e] = 0.f;
  float m[kTiles][2], l[kTiles][2];
#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt) m[mt][0] = m[mt][1] = neg_inf, l[mt][0] = l[mt][1] = 0.f;
  const float scale_log2 = 1.4426950408889634f * rsqrtf(float(D));   // exp(x / sqrt(D)) = exp2(x * this)

  for (int t = 0; t < kv_tiles; ++t) {
    load_kv(t + 1);
    wait_copies<1>();
    __syncthreads();   // tile t (and q) visible to all
    const T* Ks = KV + (t & 1) * 2 * AK_BLOCK_KV * kLd;
    const T* Vs = Ks + AK_BLOCK_KV * kLd;
    const int kv0 = t * AK_BLOCK_KV;
    if (!causal || kv0 <= wq0 + AK_WARP_ROWS - 1) {   // a tile wholly past this warp's rows has nothing for it
      float s[kTiles][kSFrags][4];
#pragma unroll
      for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
        for (int n = 0; n < kSFrags; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        unsigned qf[kTiles][4];   // q from shared memory: registers go to the accumulators
#pragma unroll
        for (int mt = 0; mt < kTiles; ++mt)
          ldmatrix_x4(qf[mt], Qs + (warp * AK_WARP_ROWS + mt * 16 + lane % 16) * kLd + kk * 16 + (lane / 16) * 8);
#pragma unroll
        for (int j = 0; j < AK_BLOCK_KV / 16; ++j) {   // k rows are the columns of k^T: no transpose
          unsigned r[4];
          ldmatrix_x4(r, Ks + (j * 16 + lane % 8 + (lane / 16) * 8) * kLd + kk * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
          for (int mt = 0; mt < kTiles; ++mt) {   // one load of k serves every row tile of the warp
            mma16816(s[mt][2 * j], qf[mt], r[0], r[1], T());
            mma16816(s[mt][2 * j + 1], qf[mt], r[2], r[3], T());
          }
        }
      }
      const bool edge = (causal && kv0 + AK_BLOCK_KV - 1 > wq0) || kv0 + AK_BLOCK_KV > S;   // some key masked
#pragma unroll
      for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
        for (int n = 0; n < kSFrags; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = kv0 + n * 8 + (lane % 4) * 2 + (e & 1), row = wq0 + mt * 16 + lane / 4 + (e >> 1) * 8;
            s[mt][n][e] = edge && ((causal && key > row) || key >= S) ? neg_inf : s[mt][n][e] * scale_log2;
          }
#pragma unroll
      for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {   // the online softmax of one row; a quad of lanes shares it
          float mx = neg_inf;
#pragma unroll
          for (int n = 0; n < kSFrags; ++n) mx = fmaxf(mx, fmaxf(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float m_new = fmaxf(m[mt][h], mx);
          const float base = m_new == neg_inf ? 0.f : m_new;   // a row with no key yet stays at zero
          const float alpha = exp2f(m[mt][h] - base);          // 0 on the first tile: m is -inf
          m[mt][h] = m_new;
          l[mt][h] *= alpha;
#pragma unroll
          for (int n = 0; n < kOFrags; ++n) {
            acc[mt][n][2 * h] *= alpha;
            acc[mt][n][2 * h + 1] *= alpha;
          }
#pragma unroll
          for (int n = 0; n < kSFrags; ++n) {
            s[mt][n][2 * h] = exp2f(s[mt][n][2 * h] - base);
            s[mt][n][2 * h + 1] = exp2f(s[mt][n][2 * h + 1] - base);
            l[mt][h] += s[mt][n][2 * h] + s[mt][n][2 * h + 1];   // this lane's columns; the quad adds up at the end
          }
        }
#pragma unroll
      for (int j = 0; j < AK_BLOCK_KV / 16; ++j) {   // O += P v, P straight from the score registers
        unsigned a[kTiles][4];
#pragma unroll
        for (int mt = 0; mt < kTiles; ++mt) {
          a[mt][0] = pack(s[mt][2 * j][0], s[mt][2 * j][1], T());
          a[mt][1] = pack(s[mt][2 * j][2], s[mt][2 * j][3], T());
          a[mt][2] = pack(s[mt][2 * j + 1][0], s[mt][2 * j + 1][1], T());
          a[mt][3] = pack(s[mt][2 * j + 1][2], s[mt][2 * j + 1][3], T());
        }
#pragma unroll
        for (int dn = 0; dn < D / 16; ++dn) {
          unsigned r[4];
          ldmatrix_x4_trans(r, Vs + (j * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kLd + dn * 16 + (lane / 16) * 8);
#pragma unroll
          for (int mt = 0; mt < kTiles; ++mt) {   // one load of v serves every row tile of the warp
            mma16816(acc[mt][2 * dn], a[mt], r[0], r[1], T());
            mma16816(acc[mt][2 * dn + 1], a[mt], r[2], r[3], T());
          }
        }
      }
    }
    __syncthreads();   // every warp is done with this stage before tile t + 2 is loaded into it
  }
  wait_copies<0>();

#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[mt][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int row = wq0 + mt * 16 + lane / 4 + h * 8;
      if (row >= S) continue;
      const float inv = 1.f / sum;
      T* orow = oh + (long long)row * os.seq + (lane % 4) * 2;
#pragma unroll
      for (int n = 0; n < kOFrags; ++n)
        *reinterpret_cast<unsigned*>(orow + n * 8) = pack(acc[mt][n][2 * h] * inv, acc[mt][n][2 * h + 1] * inv, T());
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
  extern __shared__ __align__(128) unsigned char smem[];
  const AkStrides qs{q_stride_batch, q_stride_head, q_stride_seq}, ks{k_stride_batch, k_stride_head, k_stride_seq},
                  vs{v_stride_batch, v_stride_head, v_stride_seq}, os{o_stride_batch, o_stride_head, o_stride_seq};
  if (D == 128) attend<T, 128>(q, k, v, o, Hq, Hkv, S, causal != 0, qs, ks, vs, os, smem);
  else if (D == 64) attend<T, 64>(q, k, v, o, Hq, Hkv, S, causal != 0, qs, ks, vs, os, smem);
  else __trap();   // outside what this file handles: fail loudly
}
