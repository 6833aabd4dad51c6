#include "kernels_cuda/tiled_grid.hpp"

namespace ak {

int64_t tiled_grid(int64_t rows, int64_t cols, int tile_m, int tile_n, int64_t batches) {
  if (tile_m < 1 || tile_n < 1) return 0;
  return batches * ((rows + tile_m - 1) / tile_m) * ((cols + tile_n - 1) / tile_n);
}

}  // namespace ak
