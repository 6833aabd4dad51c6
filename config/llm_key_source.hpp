#pragma once
/// What [llm] api_key_env, api_key_file and base_url may hold: the name of a variable, the path
/// of a file and a URL, never the key itself. A key pasted where its name or path belongs would
/// be printed by every message that names the key's source (under systemd, into the journal), so
/// such a value is refused by key name and never shown.
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

namespace ak {

/// Whether `value` looks like an API key or token rather than a variable's name or a file's
/// path: a provider's key prefix ("sk-", "sk-ant-", "ghp_", "hf_", "AIza", "AKIA", a JWT's
/// "eyJ" ...) followed by a long token, or, in a value without a path separator, a long run of
/// letters and digits that mixes both, as random tokens do and names written by people do not.
bool looks_like_api_key(std::string_view value);

/// Why `url` cannot be an [llm] base_url ("" when it can): http:// or https://, a host, an
/// optional port and path; no spaces or control characters, no user or password (a secret
/// belongs in api_key_env), no query or fragment (the API's path is appended to it).
std::string base_url_problem(std::string_view url);

/// Appends to `errors` what is wrong with the [llm] table `llm`'s key sources and base_url,
/// naming `file`, the line and the key; a value shaped like a key is never echoed.
void check_llm_endpoint(const toml::table& llm, const std::string& file, std::vector<std::string>& errors);

}  // namespace ak
