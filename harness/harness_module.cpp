#include "harness/harness_module.hpp"

#include "harness/nvrtc_compile.hpp"

namespace ak {

Result<HarnessModule> load_harness_module(GpuContext& gpu, const std::string& source, const std::string& filename,
                                          const std::vector<std::string>& name_expressions) {
  CompileRequest req{harness_kernel_prelude() + source, filename, name_expressions, gpu.info().arch};
  auto compiled = nvrtc_compile(req);
  if (!compiled) return compiled.error();
  if (!compiled->ok) return error("the harness's own kernels in " + filename + " do not compile (a harness bug): " + compiled->log);
  HarnessModule h;
  auto m = gpu.load(compiled->cubin);
  if (!m) return m.error();
  h.module = std::move(*m);
  for (auto& f : compiled->functions) {
    auto fn = h.module.function(f.lowered_name);
    if (!fn) return fn.error();
    h.functions.push_back(*fn);
  }
  return h;
}

const std::string& harness_kernel_prelude() {
  static const std::string text = R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>
__device__ __forceinline__ float ak_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_f(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_rn(float v);
template <> __device__ __forceinline__ __half ak_rn<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_rn<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_rn<float>(float v) { return v; }
)";
  return text;
}

}  // namespace ak
