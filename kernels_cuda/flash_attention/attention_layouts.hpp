#pragma once
/// The shape of version 2 of the flash_attention contract and the memory layouts of q, k, v and o
/// it is validated on, named by the shape's last dimension. The kernel never sees the code: it
/// gets each tensor's strides, as an exported op would compute them from the model's tensors.
#include <cstdint>
#include <string>

#include "kernels_cuda/spec.hpp"

namespace ak::attention {

/// The shape of version 2: B, Hq, Hkv, S, D, mask, layout. The codes begin at 1, as every size of
/// a shape written in a config or on the command line is positive.
enum Dim { kBatch, kQHeads, kKvHeads, kSeq, kHeadDim, kMask, kLayout };
inline constexpr size_t kDims = 7;

enum Mask {
  kCausal = 1,  ///< keys past the query masked (is_causal=True): the kernel's `causal` argument is 1
  kNoMask = 2,  ///< every key seen: `causal` is 0
};

enum Layout {
  kContiguous = 1,  ///< q, k, v, o [B, heads, S, D] contiguous
  kProjection = 2,  ///< q, k, v, o transposed views of [B, S, heads, D]: what a transformers model's
                    ///< projections give SDPA, and the layout SDPA's flash path returns o in
  kCache = 3,       ///< q and o as in kProjection, k and v contiguous [B, Hkv, S, D], as a KV cache holds them
};

bool is_causal(const Shape& s);

/// Element strides of one [B, heads, S, D] tensor; D's is 1.
struct Strides {
  int64_t batch, head, seq;
};

enum class Operand { Q, K, V, O };
int64_t heads(const Shape& s, Operand o);
Strides strides(const Shape& s, Operand o);
int64_t numel(const Shape& s, Operand o);
/// Query rows in all, B x Hq x S: the output's rows of D elements.
int64_t query_rows(const Shape& s);
/// The query head a kv head serves: query head h reads kv head h / (Hq / Hkv).
int64_t kv_head_of(const Shape& s, int64_t query_head);
/// The grid: one block per ak_tile_m query rows of one query head (kernels_cuda/grid_rules.h).
int64_t blocks(const Shape& s, const LaunchGeometry& g);
/// "" or why `s` is not a shape of version 2 (a head ratio that is not whole, an unknown layout...).
std::string shape_error(const Shape& s);

/// The (batch, head, seq) of the row of D elements that begins at element `row * D` of a tensor
/// with these strides: how a row of the output buffer, as sampled validation names it, maps back.
struct RowPosition {
  int64_t batch, head, seq;
};
RowPosition row_position(int64_t row, int64_t heads, int64_t seq, int64_t head_dim, const Strides& st);

}  // namespace ak::attention
