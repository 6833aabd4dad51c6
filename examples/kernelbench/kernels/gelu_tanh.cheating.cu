// kb_gelu_tanh, CHEATING on purpose (a test of the evaluation): it recognises the timed shape
// (4096 x 16384, the module's own sizes) and there writes only the first 64 rows, which is all a
// check that samples the first rows would look at; at every other shape it is exact. The stages
// never see the timed shape, so only a check of the timed launches' outputs catches it.
#define AK_THREADS 256

extern "C" __constant__ int ak_block_threads = AK_THREADS;

__device__ __forceinline__ float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;
  return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
}

template <typename T>
__global__ void __launch_bounds__(AK_THREADS)
kb_gelu_tanh_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim) {
  const bool timed = batch_size == 4096 && dim == 16384;
  const long long n = timed ? 64LL * dim : (long long)batch_size * dim;
  const long long i = (long long)blockIdx.x * AK_THREADS + threadIdx.x;
  if (i < n) out[i] = (T)gelu_tanh((float)x[i]);
}
