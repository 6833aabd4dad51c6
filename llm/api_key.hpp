#pragma once
/// Where the API key comes from: [llm] api_key_env or api_key_file (so systemd's
/// LoadCredential= works). The key is only ever handed to the HTTP layer.
#include <string>

#include "common/result.hpp"
#include "config/config.hpp"

namespace ak {

/// The key; empty when neither source is configured (a local server that takes none).
Result<std::string> load_api_key(const LlmConfig& cfg);

/// "the API key in ANTHROPIC_API_KEY", "the API key in /run/credentials/...": for messages.
std::string key_source(const LlmConfig& cfg);

/// `text` with every occurrence of the key replaced, for anything that leaves the process.
std::string redact(std::string text, const std::string& key);

}  // namespace ak
