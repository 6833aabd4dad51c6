// gelu, honest: out = 0.5 x (1 + erf(x / sqrt 2)), elementwise: the kernel of the user type that
// `autokernel plan --user-types` offers for the nn.GELU() modules of examples/models/vit_mlp.py
// (entry gelu_kernel; dims batch_size, seq_len, dim; dtypes fp16 and fp32). tests/gpu/gpu-kernelbench.sh
// serves it as a scripted LLM's first file, then edits of its knobs.
//
// v1 (as served first): one element per load, AK_ITEMS of them a block-width apart (coalesced),
// fp32 math whatever T is, 64-bit indices, a bound check on every element so that any shape works.
// AK_VEC > 1 loads AK_VEC neighbours at once (16 bytes at 8 halves) where the pointers allow and the
// whole pack is in range, element by element elsewhere: the knob the loop's edits widen.
// Grid rule `elements`: blocks = ceil(batch_size * seq_len * dim / (ak_block_threads * ak_items_per_thread)).
#include <cuda_fp16.h>

#define AK_THREADS 256
#define AK_ITEMS 4
#define AK_VEC 1

extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_items_per_thread = AK_ITEMS * AK_VEC;

__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
gelu_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int seq_len, int dim) {
  const long long n = (long long)batch_size * seq_len * dim;
  const bool aligned = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(out)) %
                        (sizeof(T) * AK_VEC)) == 0;
  const long long base = ((long long)blockIdx.x * AK_THREADS * AK_ITEMS + threadIdx.x) * AK_VEC;
#pragma unroll
  for (int j = 0; j < AK_ITEMS; ++j) {
    const long long i = base + (long long)j * AK_THREADS * AK_VEC;
    if (aligned && i + AK_VEC <= n) {
      Pack<T, AK_VEC> p = *reinterpret_cast<const Pack<T, AK_VEC>*>(x + i);
#pragma unroll
      for (int e = 0; e < AK_VEC; ++e) p.v[e] = ak_from_float<T>(gelu(ak_to_float(p.v[e])));
      *reinterpret_cast<Pack<T, AK_VEC>*>(out + i) = p;
    } else {
      for (int e = 0; e < AK_VEC; ++e)
        if (i + e < n) out[i + e] = ak_from_float<T>(gelu(ak_to_float(x[i + e])));
    }
  }
}
