#pragma once
/// The kernel types autokernel knows, looked up by name.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// The newest contract of each type: what new files are written for.
const std::vector<const KernelSpec*>& all_specs();
/// The contracts older files were written for, kept so that they still load.
const std::vector<const KernelSpec*>& older_specs();
/// The newest contract of `type`; nullptr when the type is unknown.
const KernelSpec* find_spec(const std::string& type);
/// Version `version` of `type`'s contract; nullptr when there is no such version.
const KernelSpec* find_spec(const std::string& type, int version);
/// The spec a kernel file of `type` is judged against: the version it declares
/// (kernels_cuda/contract_version.hpp). An error names the versions there are.
Result<const KernelSpec*> spec_for_file(const std::string& type, const std::string& source);
/// The starter file of a type, embedded at build time from kernels_cuda/<type>/<type>.cu
/// (ak_embed_texts in CMakeLists.txt).
const std::string* embedded_starter(const std::string& type);

// One function per kernel folder, defined there.
const KernelSpec& rmsnorm_spec();
const KernelSpec& softmax_spec();
const KernelSpec& layernorm_spec();
const KernelSpec& reduce_spec();
const KernelSpec& rotary_embedding_spec();
const KernelSpec& rotary_embedding_v1_spec();
const KernelSpec& cross_entropy_spec();
const KernelSpec& cross_entropy_v1_spec();
const KernelSpec& matmul_spec();
const KernelSpec& flash_attention_spec();
const KernelSpec& fused_mlp_spec();

}  // namespace ak
