#pragma once
/// The grid of the tensor-core types (matmul, flash_attention, fused_mlp): one block per output
/// tile, the tile's size read from the module (ak_tile_m, ak_tile_n).
#include <cstdint>

namespace ak {

/// Blocks for `batches` outputs of rows x cols each, tiled tile_m x tile_n; 0 when a tile size is
/// missing (the launch then refuses the geometry by name).
int64_t tiled_grid(int64_t rows, int64_t cols, int tile_m, int tile_n, int64_t batches = 1);

}  // namespace ak
