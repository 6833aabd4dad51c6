#include "daemon/commands/kernel_file.hpp"

#include "common/file_text.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"
#include "kernels_cuda/variants.hpp"

namespace ak {

Status use_user_spec(const std::string& path, std::string& type) {
  if (path.empty()) return ok();
  auto user = load_user_type(path);
  if (!user) return user.error();
  if (auto s = register_user_type(*user); !s) return s;
  if (!type.empty() && type != user->name)
    return error("--kernel " + type + " names another type than --spec " + path + " (" + user->name + ")");
  type = user->name;
  return ok();
}

Result<const KernelSpec*> spec_for(const std::string& type) {
  if (const KernelSpec* s = find_spec(type)) return s;
  std::string known;
  for (auto* s : all_specs()) known += (known.empty() ? "" : ", ") + s->type;
  return error("unknown kernel type '" + type + "' (--kernel expects one of: " + known + ")");
}

Result<std::string> read_kernel_file(const std::string& path, const KernelSpec& spec) {
  if (path.empty() || path == "starter") return spec.starter_source();
  auto text = read_file_text(path);
  if (text) return text;
  std::string names;
  for (auto& v : kernel_variants(spec.type)) {
    if (v.name == path) return *v.source;   // a structure of the library, by name
    names += (names.empty() ? "" : ", ") + v.name;
  }
  return error(text.error().message + " (a kernel file), and " + spec.type + " has no structure of that name (" + names + ")");
}

}  // namespace ak
