// swiglu starter: y[r, c] = silu(gate[r * ld + c]) * up[r * ld + c], silu(g) = g / (1 + exp(-g)),
// over [rows, cols] row by row: the gate product of a gated MLP, computed in fp32 and rounded once,
// where eager PyTorch rounds the SiLU, writes it, and reads it back for the product. ld is the row
// stride of gate and up: cols for two projections apart (LLaMA, Qwen2, Mistral), 2 * cols for the
// halves of one fused gate_up projection (Phi-3), whose other half lies between a row's cols and ld.
// y is dense, [rows, cols].
//
// The story of its versions:
//   v0: one block per row (or AK_ROWS_PER_BLOCK rows), scalar loads. Plain on purpose:
//      the loop starts here. It is all memory traffic: two reads and one write an element, so the
//      knobs below (vector width, rows per block, block size) are most of what there is to tune.
//   v1 (this file; contract version 2): rows of gate and up ld apart; the vector path needs ld as well as cols
//      a multiple of AK_VEC, so that every row starts aligned.
//
// The kernel-file contract (docs/kernel-contract.md): device code and launch knobs only, no host
// code; the entry point and its arguments are fixed; the harness reads the launch geometry from
// the ak_* constants below and instantiates the template for __half, __nv_bfloat16 and float.
//
// bench: autokernel bench kernels_cuda/swiglu/swiglu.cu --kernel swiglu --dtype fp16
// measured: 114.05 us median, spread 1.0% ((p90 - p10) / median), fp16 at the benchmark shape, NVIDIA H200, 2026-11-27
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// Version 2 of swiglu's contract: the row stride ld (docs/kernel-contract.md).
extern "C" __constant__ int ak_contract_version = 2;

// ---- knobs: plain lines a tuner or an LLM may rewrite ----
#define AK_THREADS 256         // threads per block (a multiple of 32 times AK_ROWS_PER_BLOCK)
#define AK_ROWS_PER_BLOCK 1    // rows one block computes; each gets AK_THREADS / AK_ROWS_PER_BLOCK threads
#define AK_VEC 1               // elements per load/store (1, 2, 4, 8); scalar when cols % AK_VEC != 0

// ---- launch geometry, read by the harness from the compiled module ----
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

constexpr int kRowThreads = AK_THREADS / AK_ROWS_PER_BLOCK;
static_assert(kRowThreads % 32 == 0, "each row needs whole warps");

// g / (1 + exp(-g)) rather than g * sigmoid(g): for a large negative g, exp overflows and the
// quotient is the limit, -0, with no infinity times zero on the way.
__device__ __forceinline__ float ak_swiglu(float g, float u) { return g / (1.f + expf(-g)) * u; }

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
swiglu_kernel(const T* __restrict__ gate, const T* __restrict__ up, T* __restrict__ y, int rows, int cols, int ld) {
  const int lane = threadIdx.x % kRowThreads;
  const long long row = (long long)blockIdx.x * AK_ROWS_PER_BLOCK + threadIdx.x / kRowThreads;
  if (row >= rows) return;  // no barrier below: a thread past the last row may leave
  const long long in = row * ld, out = row * cols;
  if (AK_VEC > 1 && cols % AK_VEC == 0 && ld % AK_VEC == 0) {
    const AkVec<T, AK_VEC>* gv = reinterpret_cast<const AkVec<T, AK_VEC>*>(gate + in);
    const AkVec<T, AK_VEC>* uv = reinterpret_cast<const AkVec<T, AK_VEC>*>(up + in);
    AkVec<T, AK_VEC>* yv = reinterpret_cast<AkVec<T, AK_VEC>*>(y + out);
    for (int i = lane; i < cols / AK_VEC; i += kRowThreads) {
      AkVec<T, AK_VEC> g = gv[i], u = uv[i], out;
#pragma unroll
      for (int k = 0; k < AK_VEC; ++k) out.v[k] = ak_from_float<T>(ak_swiglu(ak_to_float(g.v[k]), ak_to_float(u.v[k])));
      yv[i] = out;
    }
  } else {
    for (int i = lane; i < cols; i += kRowThreads)
      y[out + i] = ak_from_float<T>(ak_swiglu(ak_to_float(gate[in + i]), ak_to_float(up[in + i])));
  }
}
