#pragma once
/// Pieces the row-wise kernel types (rmsnorm, softmax, ...) share: the launch grid, the CUDA
/// conversions every reference kernel needs, and the reference's block-wide sum.
#include <string>

#include "kernels_cuda/spec.hpp"

namespace ak {

/// Blocks for a row-wise kernel: ceil(rows / rows_per_block).
int64_t rowwise_grid(const KernelSpec& spec, const Shape& s, int rows_per_block);

/// CUDA text prepended to each reference kernel: includes, to/from float, block_sum, block_max.
/// The reference runs one block of 256 threads per row; it is a template on its input type T and
/// output type O (fp32 to validate against, T to be timed as the baseline): ref_out<O>(float).
const std::string& reference_prelude();

}  // namespace ak
