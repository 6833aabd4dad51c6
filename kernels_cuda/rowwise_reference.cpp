#include "kernels_cuda/rowwise_reference.hpp"

#include "kernels_cuda/grid_rules.h"

namespace ak {

const char* const kRowwiseLaunchHelp =
    "extern \"C\" __constant__ int ak_rows_per_block = ...;  // rows per block: grid = ceil(rows / ak_rows_per_block)";

int64_t rowwise_grid(const Shape& s, const LaunchGeometry& g) {
  std::vector<long long> dims(s.begin(), s.end());
  return ak_rowwise_blocks(dims.data(), int(dims.size()), g.rows_per_block);
}

int64_t first_dim_grid(const Shape& s, const LaunchGeometry& g) {
  std::vector<long long> dims(s.begin(), s.end());
  return ak_first_dim_blocks(dims.data(), g.rows_per_block);
}

void set_rowwise_stage_shapes(KernelSpec& k, const Shape& large, const Shape& long_row) {
  k.launch_help = kRowwiseLaunchHelp;
  k.smoke_shape = {8, 512};
  k.sweep_shapes = {{32, 128}, {64, 768}, {128, 1024}, {256, 2048}, {100, 3000}, {512, 4096}, {1024, 5120}, {77, 8192},
                    large,     long_row};
  k.stability_shape = {256, 4096};
  k.determinism_shape = large;
  k.edge_shapes = {{1, 1}, {1, 7}, {3, 33}, {17, 1000}, {5, 4097}, {1, 65536}, {4, 262144}, {1031, 257}};
}

const std::string& reference_prelude() {
  static const std::string text = R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>
__device__ __forceinline__ float ref_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float ref_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ref_f(float v) { return v; }
template <typename O> __device__ __forceinline__ O ref_out(float v);
template <> __device__ __forceinline__ float ref_out<float>(float v) { return v; }
template <> __device__ __forceinline__ __half ref_out<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ref_out<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
// Tree reductions over one block of 256 threads, in a fixed order: the reference is deterministic.
// block_sum works in the type it is given (float, or double where fp32 would drift).
template <typename V>
__device__ V block_sum(V v) {
  __shared__ V s[256];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int n = 128; n > 0; n >>= 1) {
    if (threadIdx.x < n) s[threadIdx.x] += s[threadIdx.x + n];
    __syncthreads();
  }
  V r = s[0];
  __syncthreads();
  return r;
}
__device__ float block_max(float v) {
  __shared__ float s[256];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int n = 128; n > 0; n >>= 1) {
    if (threadIdx.x < n) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + n]);
    __syncthreads();
  }
  float r = s[0];
  __syncthreads();
  return r;
}
)";
  return text;
}

}  // namespace ak
