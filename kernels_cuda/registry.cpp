#include "kernels_cuda/registry.hpp"

#include <map>

#include "kernels_cuda/contract_version.hpp"

namespace ak {

const std::map<std::string, std::string>& embedded_starters();

const std::vector<const KernelSpec*>& all_specs() {
  static const std::vector<const KernelSpec*> specs{&rmsnorm_spec(), &softmax_spec(), &layernorm_spec(), &reduce_spec(),
                                                    &rotary_embedding_spec(), &cross_entropy_spec(), &matmul_spec(), &flash_attention_spec(), &fused_mlp_spec()};
  return specs;
}

const std::vector<const KernelSpec*>& older_specs() {
  static const std::vector<const KernelSpec*> specs{&rotary_embedding_v1_spec(), &cross_entropy_v1_spec()};
  return specs;
}

const KernelSpec* find_spec(const std::string& type) {
  for (const auto* s : all_specs())
    if (s->type == type) return s;
  return nullptr;
}

const KernelSpec* find_spec(const std::string& type, int version) {
  for (const auto* list : {&all_specs(), &older_specs()})
    for (const auto* s : *list)
      if (s->type == type && s->contract_version == version) return s;
  return nullptr;
}

Result<const KernelSpec*> spec_for_file(const std::string& type, const std::string& source) {
  const KernelSpec* newest = find_spec(type);
  if (!newest) return error("unknown kernel type '" + type + "'");
  auto version = declared_contract_version(source);
  if (!version) return error("the " + type + " file: " + version.error().message);
  if (const KernelSpec* s = find_spec(type, *version)) return s;
  std::string versions;
  for (int v = 1; v <= newest->contract_version; ++v)
    if (find_spec(type, v)) versions += (versions.empty() ? "" : ", ") + std::to_string(v);
  return error("the " + type + " file declares contract version " + std::to_string(*version) + ", and " + type +
               " has versions " + versions + ": write the file for one of them (docs/kernel-contract.md)");
}

const std::string* embedded_starter(const std::string& type) {
  auto& files = embedded_starters();
  auto it = files.find(type + "/" + type + ".cu");
  return it == files.end() ? nullptr : &it->second;
}

}  // namespace ak
