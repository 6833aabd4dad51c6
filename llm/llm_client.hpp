#pragma once
/// Asking the configured LLM one question, robustly for hours: retries with exponential
/// back-off and jitter on 429, 5xx, 529 and network errors (honouring Retry-After), no retry on
/// a request the server refuses (400, 401, 403, 404: the run must stop and say what to fix), a
/// circuit breaker that pauses after repeated failures, token and cost accounting, and a
/// transcript of every attempt without the key.
#include <atomic>
#include <mutex>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "llm/providers.hpp"

namespace ak {

struct LlmUsage {
  long long requests = 0, input_tokens = 0, output_tokens = 0;
  double cost_usd = 0;
};

class LlmClient {
 public:
  struct Options {
    double backoff_base_s = 2;      ///< first wait; doubles per attempt, up to backoff_max_s
    double backoff_max_s = 120;
    int breaker_failures = 3;       ///< questions failed in a row (after their retries) before a pause
    double breaker_pause_s = 300;
    /// How waiting is done; tests replace it to record the waits instead of sleeping.
    std::function<void(double seconds)> sleep;
  };

  LlmClient(LlmConfig cfg, std::string api_key, const std::atomic<bool>* cancel, Options opt);

  /// One question, with its retries. `transcript` (optional) receives the request body and
  /// every attempt; the key never appears in it.
  Result<ChatReply> ask(const ChatRequest& q, nlohmann::json* transcript = nullptr);

  /// Set when the last failure can only be fixed by a person (a refused key, a wrong URL or
  /// model): the run must stop rather than retry. The message says what to fix.
  /// With several questions at once (`[llm] concurrency`), a fatal failure of one may be
  /// reported to the next one to fail instead: both fail on the same settings.
  bool last_failure_is_fatal() const { return fatal_; }
  LlmUsage usage() const {
    std::lock_guard<std::mutex> l(mu_);
    return usage_;
  }
  double cost_of(const ChatReply& r) const;
  LlmConfig config() const {
    std::lock_guard<std::mutex> l(mu_);
    return cfg_;
  }
  /// New settings and key (SIGHUP); the usage so far is kept. Questions already asked finish
  /// with the old ones.
  void reconfigure(LlmConfig cfg, std::string api_key) {
    std::lock_guard<std::mutex> l(mu_);
    cfg_ = std::move(cfg);
    key_ = std::move(api_key);
  }

 private:
  void wait(double seconds);
  Result<ChatReply> attempt_loop(const ChatRequest& q, nlohmann::json* transcript);

  // Questions may be asked from several threads at once: the settings and the counters are
  // shared, each question works on its own copy of the settings.
  mutable std::mutex mu_;
  LlmConfig cfg_;
  std::string key_;
  const std::atomic<bool>* cancel_;
  Options opt_;
  LlmUsage usage_;
  std::atomic<bool> fatal_{false};
  std::atomic<int> failures_in_a_row_{0};
};

/// The wait before retry `attempt` (0-based): Retry-After when the server gave one, else
/// base * 2^attempt capped at max, times a jitter in [0.5, 1).
double retry_delay(int attempt, const std::string& retry_after, double base, double max, double jitter01);

}  // namespace ak
