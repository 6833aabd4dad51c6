#pragma once
/// What a run's outputs must be: the trusted GPU reference run on the same inputs, in fp32,
/// kept on the GPU, and the judging of a candidate's output against it. The GPU screens every
/// element (DeviceChecks); only an output the screen does not pass is downloaded and judged on
/// the host, which also describes what is wrong. Every element, or the sampled rows of a type
/// too large to recompute whole (KernelSpec::validation_rows).
#include <vector>

#include "harness/judging/compare.hpp"
#include "harness/module/device_checks.hpp"
#include "harness/module/kernel_launch.hpp"

namespace ak {

/// The rows a sampled validation checks (KernelSpec::validation_rows): every row when there are
/// no more than `want`, else `want` distinct rows from the seed, the first and last among them.
std::vector<int32_t> pick_sample_rows(int64_t rows, int want, uint64_t seed);

class ExpectedOutputs {
 public:
  /// Judges output `i` of the candidate (dtype d, on the GPU).
  Result<Comparison> judge(size_t i, const DeviceBuffer& got, DType d, Tolerance tol) const;
  /// Overwrites the expected values and the sampled rows with a fixed pattern: device memory a
  /// later launch could read then says nothing of what was checked, or that anything was.
  Status wipe() const;
  /// " (64 sampled rows checked)" under sampled validation, else "".
  std::string sampled_note() const;

 private:
  friend Result<ExpectedOutputs> reference_outputs(GpuContext&, const DeviceChecks&, const KernelSpec&,
                                                   const LaunchableKernel&, const RunBuffers&, const Shape&, DType,
                                                   uint64_t, CUresult&);
  GpuContext* gpu_ = nullptr;
  const DeviceChecks* checks_ = nullptr;
  std::vector<DeviceBuffer> values_;   ///< per output: all of it, or the sampled rows compacted (fp32)
  std::vector<int32_t> rows_;          ///< the sampled rows; empty: every element
  DeviceBuffer d_rows_;
  int64_t row_length_ = 0;
};

/// Runs the reference on `inputs` (the candidate's input buffers) into fp32 buffers on the GPU;
/// the sampled rows, if any, are drawn from `seed`. A CUDA error also lands in `cuda_error`: a
/// sticky one may be the candidate's doing (an earlier launch's stray write) and ends the worker.
Result<ExpectedOutputs> reference_outputs(GpuContext& gpu, const DeviceChecks& checks, const KernelSpec& spec,
                                          const LaunchableKernel& reference, const RunBuffers& inputs,
                                          const Shape& shape, DType d, uint64_t seed, CUresult& cuda_error);

}  // namespace ak
