#include "kernels_cuda/tiled_grid.hpp"

#include "kernels_cuda/grid_rules.h"

namespace ak {

int64_t tiled_grid(int64_t rows, int64_t cols, int tile_m, int tile_n, int64_t batches) {
  return ak_tiled_blocks(rows, cols, tile_m, tile_n, batches);
}

}  // namespace ak
