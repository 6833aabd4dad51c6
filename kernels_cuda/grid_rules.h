// The grid rules, as plain C++ with no autokernel type, so that one text serves two places: the
// specs' grid functions (kernels_cuda/rowwise_reference.cpp, kernels_cuda/tiled_grid.cpp) and the
// launchers `autokernel export` writes, which copy this file. An exported op thus launches the
// same number of blocks the harness did for the same shape and geometry.
#pragma once

/// Row-wise types: one block per ak_rows_per_block rows, rows being the product of all dimensions
/// of the shape but the last.
inline long long ak_rowwise_blocks(const long long* shape, int dims, int rows_per_block) {
  long long rows = 1;
  for (int i = 0; i + 1 < dims; ++i) rows *= shape[i];
  return (rows + rows_per_block - 1) / rows_per_block;
}

/// Tensor-core types: one block per tile_m x tile_n tile of each of `batches` rows x cols outputs;
/// 0 when a tile size is missing.
inline long long ak_tiled_blocks(long long rows, long long cols, int tile_m, int tile_n, long long batches) {
  if (tile_m < 1 || tile_n < 1) return 0;
  return batches * ((rows + tile_m - 1) / tile_m) * ((cols + tile_n - 1) / tile_n);
}
