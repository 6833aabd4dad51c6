// rotary_tables(Tensor inv_freq, Tensor position_ids, Tensor like, float scaling) -> (Tensor, Tensor)
// A step's cos and sin tables as transformers' rotary-embedding classes compute them (the forward
// of LlamaRotaryEmbedding and its kin), in one call: transformers makes a dozen PyTorch calls for
// them under an autocast guard, 0.27-0.40 ms of CPU a step on an H100 host, all of it before the
// first layer, while the GPU waits. The same values, bit for bit: each frequency is one fp32 product
// (the class's batched matmul of [dim / 2, 1] by [1, seq] makes each element one product too),
// duplicated along the last dimension, then cos and sin in fp32, the attention scaling, and the
// rounding to like's dtype.
// No kernel of a run is in it; it rides in the rotary extension, which the class's tables serve.
// Included by the rotary op's file of every contract version.
#pragma once
#include "common.h"

#include <tuple>

namespace autokernel_ops {

inline std::tuple<at::Tensor, at::Tensor> rotary_tables(const at::Tensor& inv_freq, const at::Tensor& position_ids,
                                                        const at::Tensor& like, double scaling) {
  // Four kernels where the class launches eleven: the product is taken against inv_freq twice over
  // (the class's cat of the frequencies, before rather than after it), the integer positions are
  // promoted to fp32 inside it, and cos and sin are computed in fp32 and rounded as they are stored.
  const at::Tensor inv = inv_freq.to(at::kFloat);
  const at::Tensor emb = position_ids.unsqueeze(-1) * at::cat({inv, inv});
  if (scaling != 1.0)  // x * 1.0 is x: with the class's default scaling its product is left out, exactly
    return {(emb.cos() * scaling).to(like.scalar_type()), (emb.sin() * scaling).to(like.scalar_type())};
  at::Tensor cos = empty(emb.sizes(), like), sin = empty(emb.sizes(), like);
  at::cos_out(cos, emb);
  at::sin_out(sin, emb);
  return {cos, sin};
}

}  // namespace autokernel_ops

AK_LIBRARY_FRAGMENT_EXPAND(AK_OPS_NAMESPACE, m) {
  m.def("rotary_tables(Tensor inv_freq, Tensor position_ids, Tensor like, float scaling) -> (Tensor, Tensor)");
}
AK_LIBRARY_IMPL_EXPAND(AK_OPS_NAMESPACE, m) { m.impl("rotary_tables", &autokernel_ops::rotary_tables); }
