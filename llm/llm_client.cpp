#include "llm/llm_client.hpp"

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "llm/api_key.hpp"

namespace ak {
namespace {

bool retryable_status(long s) { return s == 408 || s == 409 || s == 429 || s == 529 || s >= 500; }

}  // namespace

double retry_delay(int attempt, const std::string& retry_after, double base, double max, double jitter01) {
  if (!retry_after.empty()) {
    try {
      double s = std::stod(retry_after);
      if (s >= 0) return std::min(s, max * 5);
    } catch (...) {
    }
  }
  return std::min(max, base * std::pow(2.0, attempt)) * (0.5 + 0.5 * jitter01);
}

LlmClient::LlmClient(LlmConfig cfg, std::string api_key, const std::atomic<bool>* cancel, Options opt)
    : cfg_(std::move(cfg)), key_(std::move(api_key)), cancel_(cancel), opt_(std::move(opt)) {
  if (!opt_.sleep)
    opt_.sleep = [this](double s) {
      // Sleep in slices so that a stop request is noticed at once.
      auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
      while (std::chrono::steady_clock::now() < end && !(cancel_ && cancel_->load()))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    };
}

void LlmClient::wait(double seconds) { opt_.sleep(seconds); }

double LlmClient::cost_of(const ChatReply& r) const {
  const LlmConfig c = config();
  return (double(r.input_tokens) * c.usd_per_mtok_input + double(r.output_tokens) * c.usd_per_mtok_output) / 1e6;
}

Result<ChatReply> LlmClient::ask(const ChatRequest& q, nlohmann::json* transcript) {
  if (failures_in_a_row_ >= opt_.breaker_failures) {
    spdlog::warn("LLM: {} questions failed in a row; pausing {:.0f} s before asking again (the run's state is kept)",
                 failures_in_a_row_.load(), opt_.breaker_pause_s);
    wait(opt_.breaker_pause_s);
  }
  auto r = attempt_loop(q, transcript);
  if (r.ok()) failures_in_a_row_ = 0;
  else ++failures_in_a_row_;
  if (r.ok()) {
    const double cost = cost_of(*r);
    std::lock_guard<std::mutex> l(mu_);
    usage_.input_tokens += r->input_tokens;
    usage_.output_tokens += r->output_tokens;
    usage_.cost_usd += cost;
  }
  return r;
}

Result<ChatReply> LlmClient::attempt_loop(const ChatRequest& q, nlohmann::json* transcript) {
  fatal_ = false;
  LlmConfig cfg;
  std::string key;
  {
    std::lock_guard<std::mutex> l(mu_);
    cfg = cfg_;
    key = key_;
  }
  HttpRequest req = build_request(cfg, key, q);
  if (transcript) {
    *transcript = {{"provider", provider_name(cfg.provider)}, {"model", cfg.model}, {"url", req.url},
                   {"request", nlohmann::json::parse(req.body, nullptr, false)}, {"attempts", nlohmann::json::array()}};
  }
  static thread_local std::mt19937 rng{std::random_device{}()};
  std::string last_problem;
  for (int attempt = 0; attempt <= cfg.max_retries; ++attempt) {
    if (cancel_ && cancel_->load()) return error("cancelled: the daemon is stopping");
    {
      std::lock_guard<std::mutex> l(mu_);
      ++usage_.requests;
    }
    auto resp = http_post(req, cancel_);
    nlohmann::json record{{"attempt", attempt + 1}};
    std::string retry_after;
    if (!resp) {
      if (is_cancelled(resp.error())) return resp.error();
      last_problem = redact(resp.error().message, key);
      record["error"] = last_problem;
      fatal_ = is_malformed_url(resp.error());
    } else {
      record["status"] = resp->status;
      record["seconds"] = resp->seconds;
      record["response"] = redact(resp->body, key);
      if (resp->status == 200) {
        auto reply = parse_response(cfg.provider, resp->body);
        if (transcript) (*transcript)["attempts"].push_back(record);
        if (reply) {
          if (transcript)
            (*transcript)["usage"] = {{"input_tokens", reply->input_tokens}, {"output_tokens", reply->output_tokens},
                                      {"cost_usd", cost_of(*reply)}};
          return reply;
        }
        last_problem = "a malformed answer from " + req.url + ": " + redact(reply.error().message, key);
        spdlog::warn("LLM attempt {}: {}", attempt + 1, last_problem);
        if (attempt < cfg.max_retries) wait(retry_delay(attempt, "", opt_.backoff_base_s, opt_.backoff_max_s, std::uniform_real_distribution<>(0, 1)(rng)));
        continue;
      }
      const std::string msg = redact(error_message_of(resp->body), key);
      if (resp->status == 401 || resp->status == 403) {
        fatal_ = true;
        last_problem = key_source(cfg) + " was refused by " + req.url + " (HTTP " + std::to_string(resp->status) +
                       ": " + msg + "): set a valid key and restart";
      } else if (resp->status == 404) {
        fatal_ = true;
        last_problem = req.url + " answered HTTP 404 (" + msg + "): check [llm] base_url and model = \"" + cfg.model + "\"";
      } else if (resp->status == 400) {
        fatal_ = true;
        last_problem = req.url + " refused the request (HTTP 400: " + msg + "): check [llm] model and max_output_tokens";
      } else if (!retryable_status(resp->status)) {
        fatal_ = true;
        last_problem = req.url + " answered HTTP " + std::to_string(resp->status) + ": " + msg;
      } else {
        last_problem = req.url + " answered HTTP " + std::to_string(resp->status) + ": " + msg;
        if (auto it = resp->headers.find("retry-after"); it != resp->headers.end()) retry_after = it->second;
      }
    }
    if (transcript) (*transcript)["attempts"].push_back(record);
    if (fatal_) return error(last_problem);
    if (attempt < cfg.max_retries) {
      double d = retry_delay(attempt, retry_after, opt_.backoff_base_s, opt_.backoff_max_s,
                             std::uniform_real_distribution<>(0, 1)(rng));
      spdlog::warn("LLM attempt {} of {}: {}; retrying in {:.1f} s", attempt + 1, cfg.max_retries + 1, last_problem, d);
      wait(d);
    }
  }
  return error("the LLM did not answer after " + std::to_string(cfg.max_retries + 1) + (cfg.max_retries ? " attempts: " : " attempt: ") + last_problem);
}

}  // namespace ak
