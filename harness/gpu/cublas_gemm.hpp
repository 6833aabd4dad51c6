#pragma once
/// cuBLAS, loaded at run time like the driver so that autokernel starts without it: the GEMMs
/// behind the measured compute peak and behind the cuBLAS baselines of matmul and fused_mlp.
#include <memory>
#include <vector>

#include "harness/gpu/gpu_context.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

class CublasGemm {
 public:
  /// Loads libcublas and creates a handle; an Error says which step failed.
  static Result<std::unique_ptr<CublasGemm>> open();
  ~CublasGemm();

  /// Enqueues C[m,n] = A[m,k] B[k,n] (B given as [n,k] when g.b_transposed) on the default stream:
  /// row-major, every matrix in dtype d, fp32 accumulation (no TF32).
  Status run(const GemmShape& g, DType d, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c);

 private:
  CublasGemm() = default;
  struct Api;
  std::unique_ptr<Api> api_;
};

/// The median time in microseconds of the GEMMs run back to back (the cuBLAS baseline of a
/// shape), timed as a candidate is: CUPTI's record of cuBLAS's kernels on the GPU, first start to
/// last end of each repetition (CUDA events around them only where CUPTI cannot record), the L2
/// flushed before each repetition, inputs random.
Result<double> time_cublas_gemms(GpuContext& gpu, const std::vector<GemmShape>& gemms, DType d, int repetitions);

}  // namespace ak
