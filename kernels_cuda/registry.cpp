#include "kernels_cuda/registry.hpp"

#include <map>

namespace ak {

const std::map<std::string, std::string>& embedded_starters();

const std::vector<const KernelSpec*>& all_specs() {
  static const std::vector<const KernelSpec*> specs{&rmsnorm_spec(), &softmax_spec(), &layernorm_spec(), &reduce_spec(),
                                                    &rotary_embedding_spec(), &cross_entropy_spec(), &matmul_spec(), &flash_attention_spec(), &fused_mlp_spec()};
  return specs;
}

const KernelSpec* find_spec(const std::string& type) {
  for (const auto* s : all_specs())
    if (s->type == type) return s;
  return nullptr;
}

const std::string* embedded_starter(const std::string& type) {
  auto& files = embedded_starters();
  auto it = files.find(type + "/" + type + ".cu");
  return it == files.end() ? nullptr : &it->second;
}

}  // namespace ak
