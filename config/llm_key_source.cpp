#include "config/llm_key_source.hpp"

#include <algorithm>
#include <cctype>

namespace ak {
namespace {

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && std::isspace((unsigned char)v.front())) v.remove_prefix(1);
  while (!v.empty() && std::isspace((unsigned char)v.back())) v.remove_suffix(1);
  return v;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// The prefixes providers put before their keys and tokens. A value counts only when a long
/// tail with a digit follows, so a variable such as "hf_token" is not taken for one.
bool has_key_prefix(std::string_view v) {
  static constexpr std::string_view kPrefixes[] = {
      "sk-", "sk_", "rk_live_", "rk_test_", "pk_live_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
      "glpat-", "hf_", "gsk_", "xai-", "pplx-", "r8_", "xoxb-", "xoxp-", "xapp-", "AIza", "ya29.", "eyJ",
      "Bearer ", "bearer "};
  for (std::string_view p : kPrefixes) {
    if (v.substr(0, p.size()) != p) continue;
    const std::string_view tail = v.substr(p.size());
    if (tail.size() >= 16 && std::any_of(tail.begin(), tail.end(), is_digit)) return true;
  }
  return false;
}

/// An AWS access key id: AKIA or ASIA and 16 capitals or digits.
bool is_aws_key_id(std::string_view v) {
  return v.size() == 20 && (v.substr(0, 4) == "AKIA" || v.substr(0, 4) == "ASIA") &&
         std::all_of(v.begin(), v.end(), [](char c) { return is_digit(c) || (c >= 'A' && c <= 'Z'); });
}

/// A run of token characters as random keys are written (base62, hex, base64): long, with digits
/// and letters mixed. Names people write are split by '_', '-', '.' or '/' into short words.
bool has_random_run(std::string_view v) {
  size_t digits = 0, letters = 0, length = 0;
  auto random_so_far = [&] {
    return (length >= 24 && digits >= 3 && letters >= 3) || (length >= 32 && digits >= 1 && letters >= 1);
  };
  for (char c : v) {
    if (is_digit(c) || is_letter(c) || c == '+' || c == '=') {
      ++length;
      digits += is_digit(c);
      letters += is_letter(c);
      if (random_so_far()) return true;
    } else {
      digits = letters = length = 0;
    }
  }
  return false;
}

bool is_variable_name(std::string_view v) {
  return !v.empty() && !is_digit(v[0]) &&
         std::all_of(v.begin(), v.end(), [](char c) { return is_digit(c) || is_letter(c) || c == '_'; });
}

bool is_host_char(char c) { return is_digit(c) || is_letter(c) || c == '-' || c == '.' || c == '_'; }

/// Why `authority` (host[:port] or [v6]:port) cannot be a server's address; "" when it can.
std::string authority_problem(std::string_view authority) {
  std::string_view host = authority, port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return "its IPv6 address has no closing ']'";
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return "something other than a port follows its IPv6 address";
    has_port = !after.empty();
    port = has_port ? after.substr(1) : after;
    if (host.empty() || !std::all_of(host.begin(), host.end(), [](char c) { return std::isxdigit((unsigned char)c) || c == ':' || c == '.'; }))
      return "its IPv6 address is not one";
  } else {
    if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      has_port = true;
    }
    if (host.empty()) return "it names no host";
    if (!std::all_of(host.begin(), host.end(), is_host_char))
      return "its host has characters a host name cannot have (write a non-ASCII name in its xn-- form)";
  }
  if (has_port) {
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), is_digit) || std::stoi(std::string(port)) == 0 ||
        std::stoi(std::string(port)) > 65535)
      return "its port is not a number from 1 to 65535";
  }
  return "";
}

}  // namespace

bool looks_like_api_key(std::string_view value) {
  const std::string_view v = trimmed(value);
  if (has_key_prefix(v) || is_aws_key_id(v)) return true;
  return v.find('/') == std::string_view::npos && has_random_run(v);
}

std::string base_url_problem(std::string_view url) {
  if (url.empty()) return "";
  if (std::any_of(url.begin(), url.end(), [](char c) { return (unsigned char)c <= 0x20 || c == 0x7F; }))
    return "it holds a space or a control character";
  std::string_view rest;
  if (url.substr(0, 7) == "http://") rest = url.substr(7);
  else if (url.substr(0, 8) == "https://") rest = url.substr(8);
  else return "it does not start with http:// or https://";
  if (rest.find_first_of("?#") != std::string_view::npos)
    return "it has a query or a fragment ('?' or '#'), but the API's path is appended to it";
  const std::string_view authority = rest.substr(0, rest.find('/'));
  if (authority.find('@') != std::string_view::npos)
    return "it holds a user or a password before '@': put the key in api_key_env or api_key_file instead";
  return authority_problem(authority);
}

void check_llm_endpoint(const toml::table& llm, const std::string& file, std::vector<std::string>& errors) {
  auto text_of = [&](const char* key) -> std::pair<const toml::node*, std::string> {
    const toml::node* n = llm.get(key);
    auto v = n ? n->value<std::string>() : std::nullopt;
    return {v ? n : nullptr, v.value_or("")};
  };
  auto at = [&](const toml::node& n, const char* key) {
    return file + ":" + std::to_string(n.source().begin.line) + ": llm." + key;
  };
  const std::string exposed = ". The key was written into this file: treat it as exposed, and rotate it";
  if (auto [n, v] = text_of("api_key_env"); n && !v.empty()) {
    if (looks_like_api_key(v))
      errors.push_back(at(*n, "api_key_env") + " holds what looks like an API key itself, not the name of a variable "
                       "(the value is not shown): put the key in the daemon's environment (systemd: EnvironmentFile=) "
                       "and write the variable's name here, e.g. api_key_env = \"ANTHROPIC_API_KEY\"" + exposed);
    else if (!is_variable_name(v))
      errors.push_back(at(*n, "api_key_env") + " is not the name of an environment variable (letters, digits and '_', "
                       "not starting with a digit; the value is not shown, in case it is a key): e.g. "
                       "api_key_env = \"ANTHROPIC_API_KEY\"");
  }
  if (auto [n, v] = text_of("api_key_file"); n && !v.empty() && looks_like_api_key(v))
    errors.push_back(at(*n, "api_key_file") + " holds what looks like an API key itself, not the path of a file "
                     "(the value is not shown): write the key into a file only the daemon reads (systemd: "
                     "LoadCredential=) and give its path here, e.g. api_key_file = "
                     "\"/run/credentials/autokernel.service/llm-key\"" + exposed);
  if (auto [n, v] = text_of("base_url"); n) {
    if (const std::string why = base_url_problem(v); !why.empty()) {
      const bool showable = !looks_like_api_key(v) && v.find('@') == std::string::npos &&
                            std::none_of(v.begin(), v.end(), [](char c) { return (unsigned char)c < 0x20 || c == 0x7F; });
      errors.push_back(at(*n, "base_url") + (showable ? " = \"" + v + "\"" : std::string(" (the value is not shown)")) +
                       ": not a URL the client can use: " + why +
                       "; expected e.g. \"https://api.example.com/v1\" or \"http://127.0.0.1:8000/v1\"");
    }
  }
}

}  // namespace ak
