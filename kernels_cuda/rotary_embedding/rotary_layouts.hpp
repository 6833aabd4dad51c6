#pragma once
/// The memory layouts of q and k that version 2 of the rotary_embedding contract is validated on,
/// named by the shape's last dimension, and the element strides each implies. The kernel never
/// sees the code: it gets the strides, as an exported op computes them from the model's tensors.
#include <cstdint>

#include "kernels_cuda/spec.hpp"

namespace ak::rotary {

/// The shape of version 2: batch, q_heads, k_heads, seq, head_dim, layout.
enum Dim { kBatch, kQHeads, kKHeads, kSeq, kHeadDim, kLayout };

enum Layout {
  kContiguous = 0,   ///< q, k [batch, heads, seq, head_dim] contiguous; cos, sin [seq, head_dim] for every batch
  kProjection = 1,   ///< q, k transposed views of [batch, seq, heads, head_dim] (a projection's output, as
                     ///< transformers has them); cos, sin [batch, seq, head_dim]; outputs with the inputs' strides
  kFusedRows = 2,    ///< q, k inside rows of one fused projection, [batch, seq, (q_heads + 2 k_heads) head_dim];
                     ///< cos, sin [batch, seq, head_dim]; outputs dense [batch, seq, heads, head_dim]
};
inline constexpr int kLayouts = 3;

/// Element strides of one tensor of [batch, heads, seq, head_dim]; head_dim's is 1.
struct Strides {
  int64_t batch, head, seq;
};

/// Table: cos and sin, alike (their head stride is unused).
enum class Operand { Q, K, QOut, KOut, Table };
int64_t heads(const Shape& s, Operand o);
Strides strides(const Shape& s, Operand o);
/// cos's and sin's: batch (0 when one table serves every batch) and seq.
Strides table_strides(const Shape& s);
int64_t numel(const Shape& s, Operand o);   ///< elements of the buffer that holds it
int64_t table_numel(const Shape& s);
/// Rows of work: one per head vector of q and of k, batch x (q_heads + k_heads) x seq.
int64_t rows(const Shape& s);
/// The grid: ak_rotary_blocks (kernels_cuda/grid_rules.h), which exported launchers call too.
int64_t blocks(const Shape& s, const LaunchGeometry& g);
/// "" or why `s` is not a shape of version 2 (odd head_dim, an unknown layout).
std::string shape_error(const Shape& s);

}  // namespace ak::rotary
