#include "daemon/run_folder/state_file.hpp"

#include <cctype>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "common/file_text.hpp"
#include "common/text_escape.hpp"

namespace ak {
namespace {

enum class Kind { Number, Integer, String, Object };

using Fields = std::vector<std::pair<const char*, Kind>>;

const Fields& top_fields() {
  static const Fields f{{"run", Kind::String},          {"status", Kind::String},        {"experiments", Kind::Integer},
                        {"next_experiment", Kind::Integer}, {"amdahl_speedup", Kind::Number}, {"llm_tokens", Kind::Integer},
                        {"llm_cost_usd", Kind::Number},  {"seconds", Kind::Number},       {"wall_seconds", Kind::Number},
                        {"decisions", Kind::Object},     {"stale_verdicts", Kind::Object}};
  return f;
}

const Fields& gpu_fields() {
  static const Fields f{{"device", Kind::Integer}, {"model", Kind::String}, {"doing", Kind::String}};
  return f;
}

const Fields& kernel_fields() {
  static const Fields f{{"tag", Kind::String},        {"type", Kind::String},       {"shape", Kind::String},
                        {"dtype", Kind::String},      {"weight", Kind::Number},     {"baseline_us", Kind::Number},
                        {"best_us", Kind::Number},    {"speedup", Kind::Number},    {"baseline", Kind::String},
                        {"pct_peak", Kind::Number},   {"throughput", Kind::Number}, {"experiments", Kind::Integer},
                        {"consecutive_reverts", Kind::Integer}, {"seconds", Kind::Number}, {"in_flight", Kind::Integer},
                        {"gpu_model", Kind::String},  {"converged", Kind::String},   {"gpu", Kind::String},
                        {"arch", Kind::String},       {"unit", Kind::String},        {"peak", Kind::Number},
                        {"broken_in_a_row", Kind::Integer}};
  return f;
}

const char* expected(Kind k) {
  switch (k) {
    case Kind::Number: return "a number";
    case Kind::Integer: return "an integer";
    case Kind::String: return "a string";
    default: return "an object";
  }
}

bool fits(const nlohmann::json& v, Kind k) {
  switch (k) {
    case Kind::Number: return v.is_number();
    case Kind::Integer: return v.is_number_integer();
    case Kind::String: return v.is_string();
    default: return v.is_object();
  }
}

std::string kind_of(const nlohmann::json& v) {
  if (v.is_number_float()) return "a fractional number";
  return std::string(v.is_object() || v.is_array() ? "an " : "a ") + v.type_name();
}

/// The first field of `object` (named `where` in messages) of the wrong type; nulls of number
/// fields removed.
std::optional<std::string> wrong_field(nlohmann::json& object, const std::string& where, const Fields& fields) {
  for (auto& [key, kind] : fields) {
    auto it = object.find(key);
    if (it == object.end()) continue;
    if (it->is_null() && (kind == Kind::Number || kind == Kind::Integer)) {
      object.erase(it);
      continue;
    }
    if (!fits(*it, kind)) return where + key + " is " + kind_of(*it) + ": expected " + expected(kind);
  }
  return std::nullopt;
}

/// A tag names a file of the run folder (kernels/<tag>.cu): no folder, no hidden file.
bool plain_name(const std::string& s) {
  if (s.empty() || s[0] == '.' || s.size() > 200) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

std::optional<std::string> wrong_array(nlohmann::json& state, const char* key, const Fields& fields, bool tagged) {
  auto it = state.find(key);
  if (it == state.end()) return std::nullopt;
  if (it->is_null()) {   // read as no entries
    state.erase(it);
    return std::nullopt;
  }
  if (!it->is_array()) return std::string(key) + " is " + kind_of(*it) + ": expected an array of objects";
  for (size_t i = 0; i < it->size(); ++i) {
    nlohmann::json& e = (*it)[i];
    const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    if (!e.is_object()) return where + " is " + kind_of(e) + ": expected an object";
    if (auto why = wrong_field(e, where + ".", fields)) return why;
    if (tagged && e.contains("tag") && !plain_name(e["tag"].get<std::string>()))
      return where + ".tag is \"" + terminal_safe(e["tag"].get<std::string>().substr(0, 60)) +
             "\": expected a kernel's name (letters, digits, '-', '_', '.')";
  }
  return std::nullopt;
}

}  // namespace

Status check_state_shape(nlohmann::json& state, const std::string& path) {
  const std::string fix = " (autokernel writes this file after each experiment: restore it, or remove it and the next "
                          "start of the run writes it again, with the LLM cost spent so far counted from 0)";
  if (!state.is_object()) return error(path + ": is " + kind_of(state) + ", not a run's state (an object)" + fix);
  std::optional<std::string> why = wrong_field(state, "", top_fields());
  if (!why) why = wrong_array(state, "gpus", gpu_fields(), false);
  if (!why) why = wrong_array(state, "kernels", kernel_fields(), true);
  if (why) return error(path + ": " + *why + fix);
  return ok();
}

Result<nlohmann::json> read_state_file(const std::string& path) {
  auto text = read_file_text(path);
  if (!text) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) && !ec) return nlohmann::json::object();
    return error(text.error().message + " (the run's state)");
  }
  auto state = nlohmann::json::parse(*text, nullptr, false);
  if (state.is_discarded())
    return error(path + ": not valid JSON (autokernel writes this file after each experiment: restore it, or remove it and "
                        "the next start of the run writes it again, with the LLM cost spent so far counted from 0)");
  if (auto s = check_state_shape(state, path); !s) return s.error();
  return state;
}

}  // namespace ak
