#pragma once
/// Pieces the tensor-core kernel types (matmul, flash_attention, fused_mlp) share: their sampled
/// validation and the grid of a tiled output.
#include "kernels_cuda/spec.hpp"

namespace ak {

/// Blocks for an output of rows x cols tiled tile_m x tile_n (per matrix, `batches` of them).
int64_t tiled_grid(int64_t rows, int64_t cols, const LaunchGeometry& g, int64_t batches = 1);

/// The stage-3 recipes of the GEMM types: near-max values overflow any fp16 product in PyTorch
/// as well, so they test nothing but infinities; the others stay.
const std::vector<Recipe>& gemm_stability_recipes();

}  // namespace ak
