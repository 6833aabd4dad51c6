#pragma once
/// The wire formats of the two APIs: OpenAI-compatible Chat Completions and Anthropic Messages.
/// Pure functions from a question to an HTTP request and from a response body to an answer.
#include <string>

#include "common/result.hpp"
#include "config/config.hpp"
#include "llm/http_client.hpp"

namespace ak {

struct ChatRequest {
  std::string system;
  std::string user;
  int max_output_tokens = 16000;
};

struct ChatReply {
  std::string text;
  bool truncated = false;          ///< stopped at the token limit (finish_reason/stop_reason)
  std::string stop_reason;
  long long input_tokens = 0, output_tokens = 0;
};

/// The provider's public endpoint, used when [llm] base_url is empty.
std::string default_base_url(ProviderKind p);

/// Reasoning models (o1, o3, o4, gpt-5, ...) take max_completion_tokens and no max_tokens.
bool takes_max_completion_tokens(const std::string& model);

/// The request, key included in its headers: never log or save the result's headers.
HttpRequest build_request(const LlmConfig& cfg, const std::string& api_key, const ChatRequest& q);

/// The answer in a 200 response's body; an Error for a body that is not what the API sends.
Result<ChatReply> parse_response(ProviderKind p, const std::string& body);

/// The error message inside an error response's body, if it has one.
std::string error_message_of(const std::string& body);

}  // namespace ak
