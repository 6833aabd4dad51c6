#include "llm/api_key.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "config/llm_key_source.hpp"

namespace ak {
namespace {

/// A key source as a message may show it: the config refuses a key pasted in its place, and a
/// config built another way is masked here too, so no message carries a key.
std::string shown(const std::string& source) {
  return looks_like_api_key(source) ? "<a value shaped like an API key, not shown>" : source;
}

}  // namespace

std::string key_source(const LlmConfig& cfg) {
  if (!cfg.api_key_env.empty()) return "the API key in $" + shown(cfg.api_key_env);
  if (!cfg.api_key_file.empty()) return "the API key in " + shown(cfg.api_key_file);
  return "no API key (none configured)";
}

Result<std::string> load_api_key(const LlmConfig& cfg) {
  if (!cfg.api_key_env.empty()) {
    const char* v = std::getenv(cfg.api_key_env.c_str());
    if (!v || !*v)
      return error("[llm] api_key_env = \"" + shown(cfg.api_key_env) + "\", but $" + shown(cfg.api_key_env) +
                   " is not set in the daemon's environment (systemd: Environment= or EnvironmentFile=)");
    return std::string(v);
  }
  if (!cfg.api_key_file.empty()) {
    std::ifstream in(cfg.api_key_file);
    if (!in) return error("[llm] api_key_file = \"" + shown(cfg.api_key_file) + "\" cannot be read");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string key = ss.str();
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
    if (key.empty()) return error("[llm] api_key_file = \"" + shown(cfg.api_key_file) + "\" is empty");
    return key;
  }
  return std::string();
}

std::string redact(std::string text, const std::string& key) {
  if (key.size() < 4) return text;
  for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), "<redacted>");
  return text;
}

}  // namespace ak
