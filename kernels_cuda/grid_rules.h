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

/// rotary_embedding (contract version 2), shape {batch, q_heads, k_heads, seq, head_dim, layout}:
/// one row per head vector of q and of k, ak_rows_per_block rows a block.
inline long long ak_rotary_blocks(const long long* shape, int rows_per_block) {
  const long long rows = shape[0] * (shape[1] + shape[2]) * shape[3];
  return (rows + rows_per_block - 1) / rows_per_block;
}

/// Types whose shape's first dimension is the rows and whose other dimensions describe one row
/// (swiglu version 2, {rows, cols, ld}): one block per ak_rows_per_block rows.
inline long long ak_first_dim_blocks(const long long* shape, int rows_per_block) {
  return (shape[0] + rows_per_block - 1) / rows_per_block;
}

/// Tensor-core types: one block per tile_m x tile_n tile of each of `batches` rows x cols outputs;
/// 0 when a tile size is missing.
inline long long ak_tiled_blocks(long long rows, long long cols, int tile_m, int tile_n, long long batches) {
  if (tile_m < 1 || tile_n < 1) return 0;
  return batches * ((rows + tile_m - 1) / tile_m) * ((cols + tile_n - 1) / tile_n);
}

/// Clustered launches (ak_cluster_blocks): the grid rounded up to whole clusters along x; the
/// blocks past the work find no tile and do nothing.
inline long long ak_cluster_rounded_blocks(long long blocks, int cluster_blocks) {
  if (cluster_blocks < 1) cluster_blocks = 1;
  return (blocks + cluster_blocks - 1) / cluster_blocks * cluster_blocks;
}

/// Persistent kernels (ak_persistent): as many blocks as the GPU holds at once (resident_blocks:
/// SMs x blocks per SM, or clusters the GPU holds x the cluster size), never more than the work
/// needs, in whole clusters, and at least one cluster. The kernel loops over its tiles itself.
inline long long ak_persistent_blocks(long long work_blocks, long long resident_blocks, int cluster_blocks) {
  if (cluster_blocks < 1) cluster_blocks = 1;
  const long long work = ak_cluster_rounded_blocks(work_blocks, cluster_blocks);
  long long resident = resident_blocks / cluster_blocks * cluster_blocks;
  if (resident < cluster_blocks) resident = cluster_blocks;
  return work < resident ? work : resident;
}

/// User types with grid = "elements": one block per block_threads * items_per_thread elements of
/// the first output.
inline long long ak_elementwise_blocks(long long numel, int block_threads, int items_per_thread) {
  if (block_threads < 1 || items_per_thread < 1) return 0;
  const long long per_block = (long long)block_threads * items_per_thread;
  return (numel + per_block - 1) / per_block;
}
