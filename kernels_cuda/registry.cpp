#include "kernels_cuda/registry.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "kernels_cuda/contract_version.hpp"

namespace ak {

const std::map<std::string, std::string>& embedded_starters();

const std::vector<const KernelSpec*>& all_specs() {
  static const std::vector<const KernelSpec*> specs{&rmsnorm_spec(), &softmax_spec(), &layernorm_spec(), &reduce_spec(),
                                                    &rotary_embedding_spec(), &cross_entropy_spec(), &matmul_spec(), &flash_attention_spec(), &fused_mlp_spec(),
                                                    &swiglu_spec()};
  return specs;
}

const std::vector<const KernelSpec*>& older_specs() {
  static const std::vector<const KernelSpec*> specs{&rotary_embedding_v1_spec(), &cross_entropy_v1_spec(), &matmul_v1_spec(),
                                                    &flash_attention_v1_spec(), &swiglu_v1_spec()};
  return specs;
}

namespace {

struct RegisteredUserType {
  UserTypeSpec user;
  KernelSpec spec;
};

/// User types, by name; entries are never removed, so the pointers handed out stay valid.
struct UserTypeRegistry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<const RegisteredUserType>> types;
};

UserTypeRegistry& user_types() {
  static UserTypeRegistry r;
  return r;
}

const RegisteredUserType* find_registered(const std::string& type) {
  UserTypeRegistry& r = user_types();
  std::lock_guard<std::mutex> l(r.mu);
  auto it = r.types.find(type);
  return it == r.types.end() ? nullptr : it->second.get();
}

}  // namespace

const KernelSpec* find_builtin_spec(const std::string& type) {
  for (const auto* list : {&all_specs(), &older_specs()})
    for (const auto* s : *list)
      if (s->type == type) return s;
  return nullptr;
}

const KernelSpec* find_spec(const std::string& type) {
  for (const auto* s : all_specs())
    if (s->type == type) return s;
  const RegisteredUserType* u = find_registered(type);
  return u ? &u->spec : nullptr;
}

const KernelSpec* find_spec(const std::string& type, int version) {
  for (const auto* list : {&all_specs(), &older_specs()})
    for (const auto* s : *list)
      if (s->type == type && s->contract_version == version) return s;
  const RegisteredUserType* u = find_registered(type);
  return u && u->spec.contract_version == version ? &u->spec : nullptr;
}

Status register_user_type(const UserTypeSpec& spec) {
  if (find_builtin_spec(spec.name))
    return error(spec.path + ": name = \"" + spec.name + "\" is a built-in kernel type: give the user type another name");
  UserTypeRegistry& r = user_types();
  std::lock_guard<std::mutex> l(r.mu);
  if (auto it = r.types.find(spec.name); it != r.types.end()) {
    const UserTypeSpec& old = it->second->user;
    if (old.text == spec.text && old.reference_source == spec.reference_source && old.starter_source == spec.starter_source)
      return ok();
    return error(spec.path + ": user type \"" + spec.name + "\" is already defined by " + old.path +
                 (old.path == spec.path ? " (changed since it was read: restart autokernel to use the new text)" : "") +
                 ": expected one spec per name");
  }
  r.types.emplace(spec.name, std::make_unique<const RegisteredUserType>(RegisteredUserType{spec, user_kernel_spec(spec)}));
  return ok();
}

const UserTypeSpec* find_user_type(const std::string& type) {
  const RegisteredUserType* u = find_registered(type);
  return u ? &u->user : nullptr;
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
