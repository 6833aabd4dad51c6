#include "llm/providers.hpp"

#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"

#include <nlohmann/json.hpp>

namespace ak {

std::string default_base_url(ProviderKind p) {
  return p == ProviderKind::Anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
}

bool takes_max_completion_tokens(const std::string& model) {
  for (const char* prefix : {"o1", "o3", "o4", "gpt-5"})
    if (model.rfind(prefix, 0) == 0) return true;
  return false;
}

HttpRequest build_request(const LlmConfig& cfg, const std::string& api_key, const ChatRequest& q) {
  HttpRequest r;
  std::string base = cfg.base_url.empty() ? default_base_url(cfg.provider) : cfg.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  r.connect_timeout_s = cfg.connect_timeout_s;
  r.total_timeout_s = cfg.request_timeout_s;
  r.headers["content-type"] = "application/json";
  nlohmann::json body{{"model", cfg.model}};
  if (cfg.provider == ProviderKind::Anthropic) {
    r.url = base + "/v1/messages";
    if (!api_key.empty()) r.headers["x-api-key"] = api_key;
    r.headers["anthropic-version"] = "2023-06-01";
    body["max_tokens"] = q.max_output_tokens;
    body["system"] = q.system;
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", q.user}}});
  } else {
    r.url = base + "/chat/completions";
    if (!api_key.empty()) r.headers["authorization"] = "Bearer " + api_key;
    body[takes_max_completion_tokens(cfg.model) ? "max_completion_tokens" : "max_tokens"] = q.max_output_tokens;
    body["messages"] = nlohmann::json::array(
        {{{"role", "system"}, {"content", q.system}},
         {{"role", "user"}, {"content", q.user}}});
  }
  r.body = json_dump(body);   // a prompt holding any text never throws here
  return r;
}

Result<ChatReply> parse_response(ProviderKind p, const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return error("the response body is not JSON: " + untrusted_line(body, kMessageBytes));
  ChatReply r;
  try {
    if (p == ProviderKind::Anthropic) {
      for (auto& block : j.at("content"))
        if (block.value("type", "") == "text") r.text += block.value("text", "");
      r.stop_reason = j.value("stop_reason", "");
      r.truncated = r.stop_reason == "max_tokens";
      if (j.contains("usage")) {
        r.input_tokens = j["usage"].value("input_tokens", 0LL);
        r.output_tokens = j["usage"].value("output_tokens", 0LL);
      }
    } else {
      const auto& choice = j.at("choices").at(0);
      const auto& content = choice.at("message").at("content");
      r.text = content.is_string() ? content.get<std::string>() : "";
      r.stop_reason = choice.value("finish_reason", "");
      r.truncated = r.stop_reason == "length";
      if (j.contains("usage") && j["usage"].is_object()) {
        r.input_tokens = j["usage"].value("prompt_tokens", 0LL);
        r.output_tokens = j["usage"].value("completion_tokens", 0LL);
      }
    }
  } catch (const std::exception& e) {
    return error(std::string("the response JSON lacks the answer's fields (") + e.what() + ")");
  }
  return r;
}

std::string error_message_of(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return untrusted_line(e["message"].get<std::string>(), kMessageBytes);
    if (e.is_object()) return untrusted_line(json_dump(e), kMessageBytes);
    if (e.is_string()) return untrusted_line(e.get<std::string>(), kMessageBytes);
  }
  return untrusted_line(body, kMessageBytes);
}

}  // namespace ak
