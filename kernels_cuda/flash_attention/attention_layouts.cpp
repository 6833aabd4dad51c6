#include "kernels_cuda/flash_attention/attention_layouts.hpp"

#include "kernels_cuda/grid_rules.h"

namespace ak::attention {

bool is_causal(const Shape& s) { return s[kMask] == kCausal; }

int64_t heads(const Shape& s, Operand o) { return o == Operand::Q || o == Operand::O ? s[kQHeads] : s[kKvHeads]; }

Strides strides(const Shape& s, Operand o) {
  const int64_t h = heads(s, o), seq = s[kSeq], d = s[kHeadDim];
  const bool kv = o == Operand::K || o == Operand::V;
  const bool transposed = s[kLayout] == kProjection || (s[kLayout] == kCache && !kv);
  if (transposed) return {seq * h * d, d, h * d};
  return {h * seq * d, seq * d, d};
}

int64_t numel(const Shape& s, Operand o) { return s[kBatch] * heads(s, o) * s[kSeq] * s[kHeadDim]; }

int64_t query_rows(const Shape& s) { return s[kBatch] * s[kQHeads] * s[kSeq]; }

int64_t kv_head_of(const Shape& s, int64_t query_head) { return query_head / (s[kQHeads] / s[kKvHeads]); }

int64_t blocks(const Shape& s, const LaunchGeometry& g) {
  return ak_tiled_blocks(s[kSeq], 1, g.tile_m, 1, s[kBatch] * s[kQHeads]);
}

std::string shape_error(const Shape& s) {
  if (s.size() != kDims) return "";  // the dimension count is checked with its own message
  for (Dim d : {kBatch, kQHeads, kKvHeads, kSeq, kHeadDim})
    if (s[d] < 1) return "every size must be at least 1";
  if (s[kQHeads] % s[kKvHeads])
    return "Hq " + std::to_string(s[kQHeads]) + " is not a multiple of Hkv " + std::to_string(s[kKvHeads]) +
           ": each kv head serves Hq / Hkv query heads";
  if (s[kHeadDim] % 8 || s[kHeadDim] > 256)
    return "D " + std::to_string(s[kHeadDim]) + " is not a multiple of 8 up to 256 (rows of 16-byte multiples)";
  if (s[kSeq] > 8192) return "S " + std::to_string(s[kSeq]) + " is past 8192, the longest the reference holds";
  if (s[kMask] != kCausal && s[kMask] != kNoMask)
    return "mask " + std::to_string(s[kMask]) + " is not 1 (causal) or 2 (none)";
  if (s[kLayout] != kContiguous && s[kLayout] != kProjection && s[kLayout] != kCache)
    return "layout " + std::to_string(s[kLayout]) +
           " is not one of 1 (contiguous), 2 (a projection's view) and 3 (q a projection's view, k and v a cache's)";
  return "";
}

RowPosition row_position(int64_t row, int64_t heads, int64_t seq, int64_t head_dim, const Strides& st) {
  const int64_t off = row * head_dim;
  const int64_t b = off / st.batch, rem = off - b * st.batch;
  // The larger stride is the outer dimension; equal strides mean one of the two has size 1.
  const bool head_outer = st.head > st.seq || (st.head == st.seq && seq == 1);
  if (head_outer || heads == 1) {
    if (heads == 1) return {b, 0, rem / st.seq};
    const int64_t h = rem / st.head;
    return {b, h, (rem - h * st.head) / st.seq};
  }
  const int64_t s = rem / st.seq;
  return {b, (rem - s * st.seq) / st.head, s};
}

}  // namespace ak::attention
