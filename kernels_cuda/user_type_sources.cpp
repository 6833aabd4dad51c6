// A spec with its reference and starter: read from beside the spec's file, or from the texts an
// evaluation request carries.
#include "kernels_cuda/user_type.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file_text.hpp"

namespace ak {

namespace {

Result<std::string> read_beside(const std::string& spec_path, const std::string& relative, const char* what) {
  namespace fs = std::filesystem;
  const fs::path p = fs::path(relative).is_absolute() ? fs::path(relative) : fs::path(spec_path).parent_path() / relative;
  auto text = read_file_text(p.string());
  if (!text)
    return error(spec_path + ": " + what + " = \"" + relative + "\": cannot read " + text.error().message +
                 " (the path is relative to the spec file)");
  return text;
}

}  // namespace

Result<UserTypeSpec> load_user_type(const std::string& path) {
  auto text = read_file_text(path);
  if (!text) return error("cannot read the user type's spec: " + text.error().message);
  auto spec = parse_user_type(*text, path);
  if (!spec) return spec;
  auto reference = read_beside(path, spec->reference, "reference");
  if (!reference) return reference.error();
  std::string starter;
  if (!spec->starter.empty()) {
    auto s = read_beside(path, spec->starter, "starter");
    if (!s) return s.error();
    starter = *s;
  }
  if (auto s = with_sources(*spec, *reference, starter); !s) return s.error();
  return spec;
}

nlohmann::json UserTypeSpec::to_json() const {
  return {{"path", path}, {"text", text}, {"reference_source", reference_source}, {"starter_source", starter_source}};
}

Result<UserTypeSpec> UserTypeSpec::from_json(const nlohmann::json& j) {
  for (const char* key : {"path", "text", "reference_source", "starter_source"})
    if (!j.is_object() || !j.contains(key) || !j[key].is_string())
      return error(std::string("a user type in a request lacks the string '") + key + "'");
  auto spec = parse_user_type(j["text"].get<std::string>(), j["path"].get<std::string>());
  if (!spec) return spec;
  if (auto s = with_sources(*spec, j["reference_source"].get<std::string>(), j["starter_source"].get<std::string>()); !s)
    return s.error();
  return spec;
}

}  // namespace ak
