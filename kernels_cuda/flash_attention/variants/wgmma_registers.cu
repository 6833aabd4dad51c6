// flash_attention variant wgmma_registers: FlashAttention-2's loop on Hopper's wgmma, q k^T and P v from swizzled shared memory, P from registers
//
// What it changes and why: the mma_registers variant feeds mma.sync from registers, and every
// fragment of k and v first travels through ldmatrix: those shared-memory reads, not the tensor
// cores, set its pace. sm_90's wgmma reads its B operand (and here also q) straight from shared
// memory through matrix descriptors, a warpgroup (four warps) at a time, 64 query rows each.
// q, k and v tiles are copied with cp.async into 128-byte-swizzled 64-column atoms, one layout
// for all three: q and k are read K-major (head_dim contiguous), v N-major through the
// descriptor's transpose. Per step of AK_BLOCK_KV keys a warpgroup issues S = q k^T, waits, runs
// the online softmax on the accumulator registers (the running max and sum per row, exp2 with
// the scale folded in), rescales its output registers, packs P to T in place as the A
// registers of P v (wgmma takes A from registers in mma.sync's layout), and issues P v. The
// output is divided by the row sums once, at the end. k and v are double-buffered; blocks are
// head-major with each head's longest causal rows first, so side-by-side blocks share k and v
// in L2. Not yet: overlapping one warpgroup's softmax with the other's MMAs (FlashAttention-3's
// ping-pong), TMA.
//
// Contract version 2: query head h reads kv head h / (Hq / Hkv), and q, k, v, o are read and
// written through their strides, so a projection's [B, S, H, D] rows load as contiguous heads do;
// without the causal flag every tile reads every key and only keys past S are masked.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half and __nv_bfloat16.
// wgmma needs sm_90a (the H100's architecture as the harness compiles for it).
//
// bench: autokernel bench kernels_cuda/flash_attention/variants/wgmma_registers.cu --kernel flash_attention --dtype fp16
// measured: 2742.98 us median, spread 0.4% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// The version of the flash_attention contract this file follows (docs/kernel-contract.md).
extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_BLOCK_Q 128   // query rows per block: 64 per warpgroup (64, 128 or 192)
#define AK_BLOCK_KV 64   // keys per step (64 or 128)

constexpr int kMaxD = 128;
constexpr int kGroups = AK_BLOCK_Q / 64;
constexpr int kThreads = kGroups * 128;
static_assert(AK_BLOCK_Q % 64 == 0 && AK_BLOCK_Q >= 64 && AK_BLOCK_Q <= 192, "64 query rows per warpgroup, at most 3");
static_assert(AK_BLOCK_KV == 64 || AK_BLOCK_KV == 128, "64 or 128 keys a step");
// q, then two stages of (k, v), each in 64-column atoms of 128-byte rows; + room to align to 1024.
constexpr int kSmem = (AK_BLOCK_Q + 4 * AK_BLOCK_KV) * kMaxD * 2 + 1024;
static_assert(kSmem <= 227 * 1024, "more shared memory than a block can have");

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

// A shared-memory matrix descriptor: start address, leading and stride byte offsets, 128-byte swizzle.
__device__ __forceinline__ unsigned long long descriptor(const void* p, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((smem_addr(p) & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ unsigned pack(float x, float y, __half) {
  __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ unsigned pack(float x, float y, __nv_bfloat16) {
  __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<unsigned*>(&h);
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

// _ss: a and b from shared memory, both K-major; _rs: a from registers, b N-major (transposed on
// the way in). The element type picks the instruction.
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], unsigned long long da, unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" WGMMA_ACC64
               "}, %32, %33, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT64 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" WGMMA_ACC64
               "}, %32, %33, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT64 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], unsigned long long da, unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" WGMMA_ACC128
               "}, %64, %65, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT128 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], unsigned long long da, unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WGMMA_ACC128
               "}, %64, %65, p, 1, 1, 0, 0;\n}\n" : WGMMA_OUT128 : "l"(da), "l"(db));
}
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" WGMMA_ACC64
               "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
               : WGMMA_OUT64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" WGMMA_ACC64
               "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
               : WGMMA_OUT64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long db, __half) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" WGMMA_ACC128
               "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
               : WGMMA_OUT128 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long db, __nv_bfloat16) {
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WGMMA_ACC128
               "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
               : WGMMA_OUT128 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

template <int N, typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], unsigned long long da, unsigned long long db) {
  if constexpr (N == 64) wgmma_ss_n64(d, da, db, T());
  else wgmma_ss_n128(d, da, db, T());
}
template <int N, typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long db) {
  if constexpr (N == 64) wgmma_rs_n64(d, a, db, T());
  else wgmma_rs_n128(d, a, db, T());
}

// Element strides of one [B, heads, S, D] operand.
struct AkStrides {
  long long batch, head, seq;
};

// Copies ROWS rows of D elements from row r0 of a [S, D] matrix whose rows are `ld` elements apart
// into 64-column atoms of 128-byte rows (atom stride ROWS * 128 bytes), each 16-byte chunk XOR-ed
// with its row's index within its group of eight (the 128-byte swizzle); zeros past row S.
template <typename T, int D, int ROWS>
__device__ __forceinline__ void load_rows(unsigned char* s, const T* g, int r0, int S, long long ld) {
  constexpr int kChunks = D / 8;
  for (int i = threadIdx.x; i < ROWS * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    const bool in = r0 + r < S;
    unsigned char* dst = s + (c / 8) * (ROWS * 128) + r * 128 + (((c ^ r) & 7) << 4);
    copy16(dst, in ? g + (long long)(r0 + r) * ld + c * 8 : g, in ? 16 : 0);
  }
}

template <typename T, int D>
__device__ __forceinline__ void attend(const T* q, const T* k, const T* v, T* o, int Hq, int Hkv, int S, bool causal,
                                       AkStrides q_st, AkStrides k_st, AkStrides v_st, AkStrides o_st, unsigned char* smem) {
  constexpr int kQBytes = AK_BLOCK_Q * D * 2, kTileBytes = AK_BLOCK_KV * D * 2;
  const float neg_inf = __int_as_float(0xff800000);
  unsigned char* Qs = smem;
  unsigned char* KV = smem + kQBytes;   // stage s: k at KV + 2 s kTileBytes, v after it

  // Head-major, the longest causal rows of each head first.
  const int q_tiles = (S + AK_BLOCK_Q - 1) / AK_BLOCK_Q;
  const long long head = blockIdx.x / q_tiles;   // b * Hq + h
  const int q0 = (q_tiles - 1 - (int)(blockIdx.x % q_tiles)) * AK_BLOCK_Q;
  const long long b = head / Hq, hq = head % Hq, hk = hq / (Hq / Hkv);   // query head hq reads kv head hk
  const T* qh = q + b * q_st.batch + hq * q_st.head;
  const T* kh = k + b * k_st.batch + hk * k_st.head;
  const T* vh = v + b * v_st.batch + hk * v_st.head;
  T* oh = o + b * o_st.batch + hq * o_st.head;
  const int wg = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int wq0 = q0 + wg * 64;                          // this warpgroup's first query row
  const int row0 = wq0 + warp * 16 + lane / 4;           // this lane's rows: row0 and row0 + 8

  load_rows<T, D, AK_BLOCK_Q>(Qs, qh, q0, S, q_st.seq);
  commit_copies();
  const int kv_end = causal ? min(S, q0 + AK_BLOCK_Q) : S;   // causal: no key past the block's last query
  const int kv_tiles = (kv_end + AK_BLOCK_KV - 1) / AK_BLOCK_KV;
  auto load_kv = [&](int t) {
    if (t < kv_tiles) {
      unsigned char* ks = KV + (t & 1) * 2 * kTileBytes;
      load_rows<T, D, AK_BLOCK_KV>(ks, kh, t * AK_BLOCK_KV, S, k_st.seq);
      load_rows<T, D, AK_BLOCK_KV>(ks + kTileBytes, vh, t * AK_BLOCK_KV, S, v_st.seq);
    }
    commit_copies();
  };
  load_kv(0);

  float acc[D / 2];
#pragma unroll
  for (int e = 0; e < D / 2; ++e) acc[e] = 0.f;
  float m[2] = {neg_inf, neg_inf}, l[2] = {0.f, 0.f};
  const float scale_log2 = 1.4426950408889634f * rsqrtf(float(D));   // exp(x / sqrt(D)) = exp2(x * this)

  for (int t = 0; t < kv_tiles; ++t) {
    load_kv(t + 1);
    wait_copies<1>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // this thread's copies, seen by wgmma
    __syncthreads();   // tile t (and q) visible to all
    const unsigned char* ks = KV + (t & 1) * 2 * kTileBytes;
    const unsigned char* vs = ks + kTileBytes;
    const int kv0 = t * AK_BLOCK_KV;
    if (!causal || kv0 <= wq0 + 63) {   // a tile wholly past this warpgroup's rows has nothing for it
      float s[AK_BLOCK_KV / 2];
#pragma unroll
      for (int e = 0; e < AK_BLOCK_KV / 2; ++e) s[e] = 0.f;
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {   // S = q k^T: 16 of head_dim a step, both K-major
        const int atom = kk / 4, within = (kk % 4) * 32;
        wgmma_ss<AK_BLOCK_KV, T>(s, descriptor(Qs + atom * AK_BLOCK_Q * 128 + wg * 64 * 128 + within, 16, 1024),
                                 descriptor(ks + atom * AK_BLOCK_KV * 128 + within, 16, 1024));
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

      const bool edge = (causal && kv0 + AK_BLOCK_KV - 1 > wq0) || kv0 + AK_BLOCK_KV > S;   // some key masked
#pragma unroll
      for (int e = 0; e < AK_BLOCK_KV / 2; ++e) {   // per 8 keys j = e / 4: rows row0 (e % 4 < 2) and row0 + 8
        const int key = kv0 + (e / 4) * 8 + (lane % 4) * 2 + (e & 1), row = row0 + ((e >> 1) & 1) * 8;
        s[e] = edge && ((causal && key > row) || key >= S) ? neg_inf : s[e] * scale_log2;
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {   // the online softmax of row row0 + 8h; a quad of lanes shares it
        float mx = neg_inf;
#pragma unroll
        for (int j = 0; j < AK_BLOCK_KV / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m[h], mx);
        const float base = m_new == neg_inf ? 0.f : m_new;   // a row with no key yet stays at zero
        const float alpha = exp2f(m[h] - base);              // 0 on the first tile: m is -inf
        m[h] = m_new;
        l[h] *= alpha;
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
          acc[4 * j + 2 * h] *= alpha;
          acc[4 * j + 2 * h + 1] *= alpha;
        }
#pragma unroll
        for (int j = 0; j < AK_BLOCK_KV / 8; ++j) {
          s[4 * j + 2 * h] = exp2f(s[4 * j + 2 * h] - base);
          s[4 * j + 2 * h + 1] = exp2f(s[4 * j + 2 * h + 1] - base);
          l[h] += s[4 * j + 2 * h] + s[4 * j + 2 * h + 1];   // this lane's keys; the quad adds up at the end
        }
      }
      unsigned p[AK_BLOCK_KV / 16][4];   // P as the A registers of P v: 16 keys a step
#pragma unroll
      for (int j = 0; j < AK_BLOCK_KV / 16; ++j) {
        p[j][0] = pack(s[8 * j + 0], s[8 * j + 1], T());
        p[j][1] = pack(s[8 * j + 2], s[8 * j + 3], T());
        p[j][2] = pack(s[8 * j + 4], s[8 * j + 5], T());
        p[j][3] = pack(s[8 * j + 6], s[8 * j + 7], T());
      }
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");   // the rescaled acc and P are in place
#pragma unroll
      for (int j = 0; j < AK_BLOCK_KV / 16; ++j)   // O += P v: v N-major, 16 keys (two groups of 8) a step
        wgmma_rs<D, T>(acc, p[j], descriptor(vs + j * 2 * 1024, AK_BLOCK_KV * 128, 1024));
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    __syncthreads();   // every warpgroup is done with this stage before tile t + 2 is loaded into it
  }
  wait_copies<0>();

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = row0 + h * 8;
    if (row >= S) continue;
    const float inv = 1.f / sum;
    T* orow = oh + (long long)row * o_st.seq + (lane % 4) * 2;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      *reinterpret_cast<unsigned*>(orow + j * 8) = pack(acc[4 * j + 2 * h] * inv, acc[4 * j + 2 * h + 1] * inv, T());
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
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);   // swizzle atoms are 1024-aligned
  const AkStrides qs{q_stride_batch, q_stride_head, q_stride_seq}, ks{k_stride_batch, k_stride_head, k_stride_seq},
                  vs{v_stride_batch, v_stride_head, v_stride_seq}, os{o_stride_batch, o_stride_head, o_stride_seq};
  if (D == 128) attend<T, 128>(q, k, v, o, Hq, Hkv, S, causal != 0, qs, ks, vs, os, smem);
  else if (D == 64) attend<T, 64>(q, k, v, o, Hq, Hkv, S, causal != 0, qs, ks, vs, os, smem);
  else __trap();   // outside what this file handles: fail loudly
}
