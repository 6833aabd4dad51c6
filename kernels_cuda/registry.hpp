#pragma once
/// The kernel types autokernel knows, looked up by name.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels_cuda/spec.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {

/// The newest contract of each built-in type: what new files are written for. User types are not
/// among them (find_spec() finds those).
const std::vector<const KernelSpec*>& all_specs();
/// The contracts older files were written for, kept so that they still load.
const std::vector<const KernelSpec*>& older_specs();
/// The newest contract of `type`, built in or a registered user type; nullptr when unknown.
const KernelSpec* find_spec(const std::string& type);
/// A built-in type's newest contract (or an older one's, when only that remains); nullptr otherwise.
const KernelSpec* find_builtin_spec(const std::string& type);
/// Version `version` of `type`'s contract; nullptr when there is no such version.
const KernelSpec* find_spec(const std::string& type, int version);
/// The spec a kernel file of `type` is judged against: the version it declares
/// (kernels_cuda/contract_version.hpp). An error names the versions there are.
Result<const KernelSpec*> spec_for_file(const std::string& type, const std::string& source);
/// Makes a user type known to find_spec() (at version 1) for the rest of the process. Registering
/// the same spec again (a config read twice) is fine; an error when the name is a built-in type's
/// or another spec's registered under it.
Status register_user_type(const UserTypeSpec& spec);
/// The registered user type of that name; nullptr when there is none (a built-in type, or unknown).
const UserTypeSpec* find_user_type(const std::string& type);

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
const KernelSpec& matmul_v1_spec();
const KernelSpec& flash_attention_spec();
const KernelSpec& flash_attention_v1_spec();
const KernelSpec& fused_mlp_spec();
const KernelSpec& swiglu_spec();
const KernelSpec& swiglu_v1_spec();

}  // namespace ak
