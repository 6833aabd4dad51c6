#include "daemon/proposers/model_notes.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"
#include "common/text_escape.hpp"

namespace ak {

std::string model_notes_path(const std::string& root, const std::string& tag) { return root + "/notes/" + tag + ".json"; }

Result<ModelNotes> read_model_notes(const std::string& root, const std::string& tag) {
  const std::string path = model_notes_path(root, tag);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return ModelNotes{};
  auto text = read_file_text(path);
  if (!text) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.value("scratchpad", nlohmann::json("")).is_string() || !j.value("show", nlohmann::json("")).is_string())
    return error(path + ": not the model's notes autokernel writes (a JSON object with \"scratchpad\" and \"show\"); "
                 "delete it to start this kernel's notes afresh");
  return ModelNotes{j.value("scratchpad", ""), j.value("show", "")};
}

Status write_model_notes(const std::string& root, const std::string& tag, const ModelNotes& notes) {
  std::error_code ec;
  std::filesystem::create_directories(root + "/notes", ec);
  std::filesystem::permissions(root + "/notes", std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
  nlohmann::json j{{"scratchpad", notes.scratchpad}, {"show", notes.show_variant}};
  return write_file_atomic(model_notes_path(root, tag), json_dump(j, 2) + "\n");
}

}  // namespace ak
