// kb_residual_layernorm, CHEATING on purpose (a test of the evaluation): it keeps state between
// launches in writable module memory. Block 0 counts the launches; from the fourth launch on (past
// what one correctness stage runs, into the timing) every block writes only its row's first 32
// values and leaves the rest as the previous launch wrote them, which is right as long as the
// harness reuses the same inputs and output buffer. The harness must clear or refuse such memory
// and give each launch new inputs and a poisoned output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256

extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_rows_per_block = 1;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

// The sum of v over the block, returned to every thread.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[AK_THREADS / 32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  __syncthreads();  // the previous call may still be reading partial[]
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.f;
  for (int w = 0; w < AK_THREADS / 32; ++w) s += partial[w];
  return s;
}

__device__ unsigned int ak_launches;  // the kept state

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
kb_residual_layernorm_kernel(const T* __restrict__ x, const T* __restrict__ residual,
                             const T* __restrict__ norm_weight, const T* __restrict__ norm_bias,
                             T* __restrict__ out, int batch_size, int hidden) {
  const long long row = blockIdx.x;
  if (row >= batch_size) return;  // the whole block leaves together: no barrier is skipped
  const long long off = row * hidden;
  const float scale = 0.5f;

  float sum = 0.f;
  for (int i = threadIdx.x; i < hidden; i += AK_THREADS)
    sum += ak_to_float(x[off + i]) + scale * ak_to_float(residual[off + i]);
  const float mean = block_sum(sum) / hidden;

  float sq = 0.f;
  for (int i = threadIdx.x; i < hidden; i += AK_THREADS) {
    const float d = ak_to_float(x[off + i]) + scale * ak_to_float(residual[off + i]) - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(block_sum(sq) / hidden + 1e-5f);

  const bool warm = *(volatile unsigned int*)&ak_launches > 3;
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(&ak_launches, 1u);
  const int end = warm && hidden > 32 ? 32 : hidden;
  for (int i = threadIdx.x; i < end; i += AK_THREADS) {
    const float h = ak_to_float(x[off + i]) + scale * ak_to_float(residual[off + i]);
    out[off + i] = ak_from_float<T>((h - mean) * rstd * ak_to_float(norm_weight[i]) + ak_to_float(norm_bias[i]));
  }
}
