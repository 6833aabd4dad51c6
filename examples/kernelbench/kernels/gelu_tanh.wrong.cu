// kb_gelu_tanh, WRONG on purpose (a test of the stages): float4 loads and stores with no tail.
// Each thread handles 4 consecutive elements, and the kernel only handles whole groups of 4: when
// batch_size * dim is not a multiple of 4 the last 1-3 elements are never written. It passes every
// shape whose element count is a multiple of 4 (the timed one among them) and must fail the sweep's
// odd shapes (33 x 1531), where the poisoned tail stays NaN. fp32 only (float4).
#define AK_THREADS 256

extern "C" __constant__ int ak_block_threads = AK_THREADS;
extern "C" __constant__ int ak_items_per_thread = 4;

__device__ __forceinline__ float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;
  return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
kb_gelu_tanh_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim) {
  const long long groups = (long long)batch_size * dim / 4;  // the bug: the remainder is dropped
  const long long g = (long long)blockIdx.x * AK_THREADS + threadIdx.x;
  if (g >= groups) return;
  float4 v = reinterpret_cast<const float4*>(x)[g];
  v.x = gelu_tanh(v.x);
  v.y = gelu_tanh(v.y);
  v.z = gelu_tanh(v.z);
  v.w = gelu_tanh(v.w);
  reinterpret_cast<float4*>(out)[g] = v;
}
