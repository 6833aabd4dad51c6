// kb_argmax, WRONG on purpose (a test of the stages): an off-by-one at the border: a slice stops one
// row short of dim1, so the last row of x is never looked at (unless it begins a slice of its
// own). Right wherever no column has its largest value in that row (likely at few columns and
// many rows), wrong on most shapes with many columns: with 1/dim1 of the columns' maxima in that
// row, some column has one. Otherwise the honest kernel (argmax.cu).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define AK_THREADS 256
#define AK_ROWS 128   // rows of dim1 a block of the first step walks

extern "C" __constant__ char ak_launch[] =
    "let slices = ceil_div(dim1, 128);"
    "scratch slice_value float[batch_size * slices * dim2];"
    "scratch slice_index int[batch_size * slices * dim2];"
    "step argmax_slices grid(ceil_div(dim2, 256), batch_size, slices) block(256);"
    "step argmax_combine grid(ceil_div(batch_size * dim2, 256)) block(256);";

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

/// PyTorch's order: NaN above everything, and the first of equal values wins (so a later value
/// must be strictly greater, or the first NaN).
__device__ __forceinline__ bool beats(float v, float best) { return v > best || (v != v && best == best); }

/// Step 1: the largest value of each column within one slice of 128 rows, and its row.
template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
argmax_slices(const T* __restrict__ x, long long* __restrict__ out, float* __restrict__ slice_value,
              int* __restrict__ slice_index, int batch_size, int dim1, int dim2) {
  const int j = blockIdx.x * AK_THREADS + threadIdx.x;
  if (j >= dim2) return;
  const int b = blockIdx.y, slices = (dim1 + AK_ROWS - 1) / AK_ROWS;
  const int start = blockIdx.z * AK_ROWS, end = min(start + AK_ROWS, dim1 - 1)  /* the bug: the last row is never looked at */;
  const T* column = x + (long long)b * dim1 * dim2 + j;
  float best = ak_to_float(column[(long long)start * dim2]);
  int at = start;
  for (int i = start + 1; i < end; ++i) {
    const float v = ak_to_float(column[(long long)i * dim2]);
    if (beats(v, best)) best = v, at = i;
  }
  const long long s = ((long long)b * slices + blockIdx.z) * dim2 + j;
  slice_value[s] = best;
  slice_index[s] = at;
}

/// Step 2: the slices of each column in order, the earlier one winning a tie.
template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
argmax_combine(const T* __restrict__ x, long long* __restrict__ out, float* __restrict__ slice_value,
               int* __restrict__ slice_index, int batch_size, int dim1, int dim2) {
  const long long i = (long long)blockIdx.x * AK_THREADS + threadIdx.x;
  if (i >= (long long)batch_size * dim2) return;
  const long long b = i / dim2, j = i % dim2;
  const int slices = (dim1 + AK_ROWS - 1) / AK_ROWS;
  const long long first = b * slices * dim2 + j;
  float best = slice_value[first];
  int at = slice_index[first];
  for (int s = 1; s < slices; ++s) {
    const float v = slice_value[first + (long long)s * dim2];
    if (beats(v, best)) best = v, at = slice_index[first + (long long)s * dim2];
  }
  out[i] = at;
}
