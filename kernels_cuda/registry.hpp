#pragma once
/// The kernel types autokernel knows, looked up by name.
#include <string>
#include <vector>

#include "kernels_cuda/spec.hpp"

namespace ak {

const std::vector<const KernelSpec*>& all_specs();
/// nullptr when the type is unknown.
const KernelSpec* find_spec(const std::string& type);
/// The starter file of a type, embedded at build time from kernels_cuda/<type>/<type>.cu
/// (ak_embed_texts in CMakeLists.txt).
const std::string* embedded_starter(const std::string& type);

// One function per kernel folder, defined there.
const KernelSpec& rmsnorm_spec();
const KernelSpec& softmax_spec();
const KernelSpec& layernorm_spec();
const KernelSpec& reduce_spec();
const KernelSpec& rotary_embedding_spec();
const KernelSpec& cross_entropy_spec();
const KernelSpec& matmul_spec();
const KernelSpec& flash_attention_spec();
const KernelSpec& fused_mlp_spec();

}  // namespace ak
