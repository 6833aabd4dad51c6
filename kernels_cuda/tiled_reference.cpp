#include "kernels_cuda/tiled_reference.hpp"

namespace ak {

int64_t tiled_grid(int64_t rows, int64_t cols, const LaunchGeometry& g, int64_t batches) {
  if (g.tile_m < 1 || g.tile_n < 1) return 0;  // the launch refuses a zero grid with a message
  return batches * ((rows + g.tile_m - 1) / g.tile_m) * ((cols + g.tile_n - 1) / g.tile_n);
}

const std::vector<Recipe>& gemm_stability_recipes() {
  static const std::vector<Recipe> r = {Recipe::Tiny, Recipe::OneHuge, Recipe::ConstantRows, Recipe::MixedSigns};
  return r;
}

}  // namespace ak
