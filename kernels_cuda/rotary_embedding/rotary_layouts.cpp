#include "kernels_cuda/rotary_embedding/rotary_layouts.hpp"

#include <string>

#include "kernels_cuda/grid_rules.h"

namespace ak::rotary {

int64_t heads(const Shape& s, Operand o) { return o == Operand::Q || o == Operand::QOut ? s[kQHeads] : s[kKHeads]; }

Strides strides(const Shape& s, Operand o) {
  if (o == Operand::Table) return table_strides(s);
  const int64_t h = heads(s, o), seq = s[kSeq], d = s[kHeadDim];
  const bool output = o == Operand::QOut || o == Operand::KOut;
  switch (s[kLayout]) {
    case kContiguous: return {h * seq * d, seq * d, d};
    case kFusedRows:
      if (!output) {
        const int64_t pitch = (s[kQHeads] + 2 * s[kKHeads]) * d;
        return {seq * pitch, d, pitch};
      }
      [[fallthrough]];  // outputs: dense, in the inputs' order of dimensions
    default: return {seq * h * d, d, h * d};
  }
}

Strides table_strides(const Shape& s) { return {s[kLayout] == kContiguous ? 0 : s[kSeq] * s[kHeadDim], 0, s[kHeadDim]}; }

int64_t numel(const Shape& s, Operand o) {
  if (s[kLayout] == kFusedRows && (o == Operand::Q || o == Operand::K))
    return s[kBatch] * s[kSeq] * (s[kQHeads] + 2 * s[kKHeads]) * s[kHeadDim];
  return s[kBatch] * heads(s, o) * s[kSeq] * s[kHeadDim];
}

int64_t table_numel(const Shape& s) { return (s[kLayout] == kContiguous ? 1 : s[kBatch]) * s[kSeq] * s[kHeadDim]; }

int64_t rows(const Shape& s) { return s[kBatch] * (s[kQHeads] + s[kKHeads]) * s[kSeq]; }

int64_t blocks(const Shape& s, const LaunchGeometry& g) {
  const long long shape[] = {s[0], s[1], s[2], s[3], s[4], s[5]};
  return ak_rotary_blocks(shape, g.rows_per_block);
}

std::string shape_error(const Shape& s) {
  if (s.size() != 6) return "";  // the dimension count is checked with its own message
  if (s[kHeadDim] % 2) return "head_dim " + std::to_string(s[kHeadDim]) + " is odd: the rotation pairs its two halves";
  if (s[kLayout] < 0 || s[kLayout] >= kLayouts)
    return "layout " + std::to_string(s[kLayout]) + " is not one of 0 (contiguous), 1 (a projection's view) and 2 (fused qkv rows)";
  return "";
}

}  // namespace ak::rotary
