#pragma once
/// What a run's outputs must be: the trusted GPU reference run on the same inputs, in fp32,
/// and the comparison of a candidate's output with it. Every element, or the sampled rows of
/// a type too large to recompute whole (KernelSpec::validation_rows).
#include <vector>

#include "harness/compare.hpp"
#include "harness/kernel_launch.hpp"

namespace ak {

struct ExpectedOutputs {
  std::vector<std::vector<float>> values;  ///< per output: all of it, or the sampled rows compacted
  std::vector<int32_t> rows;               ///< the sampled rows; empty: every element
  int64_t row_length = 0;

  /// Compares output `i` (the candidate's bytes, dtype d) with what it must be.
  Comparison compare(size_t i, const void* got, DType d, Tolerance tol) const;
  /// " (64 sampled rows checked)" under sampled validation, else "".
  std::string sampled_note() const;
};

/// Runs the reference on `inputs` (the candidate's input buffers) and downloads its outputs;
/// the sampled rows, if any, are drawn from `seed`. A CUDA error also lands in `cuda_error`: a
/// sticky one may be the candidate's doing (an earlier launch's stray write) and ends the worker.
Result<ExpectedOutputs> reference_outputs(GpuContext& gpu, const KernelSpec& spec, const LaunchableKernel& reference,
                                          const RunBuffers& inputs, const Shape& shape, DType d, uint64_t seed,
                                          CUresult& cuda_error);

}  // namespace ak
