#pragma once
/// Pieces the row-wise kernel types (rmsnorm, softmax, ...) share: the launch grid, the CUDA
/// conversions every reference kernel needs, and the reference's block-wide sum.
#include <string>

#include "kernels_cuda/spec.hpp"

namespace ak {

/// The grid of a row-wise kernel in words (KernelSpec::launch_help).
extern const char* const kRowwiseLaunchHelp;

/// Blocks for a row-wise kernel: ceil(rows / rows_per_block).
int64_t rowwise_grid(const Shape& s, const LaunchGeometry& g);
/// Blocks for a row-wise kernel whose shape's first dimension alone counts the rows (the others
/// describe a row: swiglu's cols and row stride): ceil(shape[0] / rows_per_block).
int64_t first_dim_grid(const Shape& s, const LaunchGeometry& g);

/// The shapes of the five stages that every row-wise type shares: a small smoke shape, eight sweep
/// shapes (some not multiples of 8 or 32) plus `large` and `long_row`, a stability shape, `large`
/// again for determinism, and the edge cases (one element, one row, odd lengths, 262144-long rows).
void set_rowwise_stage_shapes(KernelSpec& k, const Shape& large, const Shape& long_row);

/// CUDA text prepended to each reference kernel: includes, to/from float, block_sum, block_max.
/// The reference runs one block of 256 threads per row; it is a template on its input type T and
/// output type O (fp32 to validate against, T to be timed as the baseline): ref_out<O>(float).
const std::string& reference_prelude();

}  // namespace ak
