#pragma once
/// The LLM as a Proposer: renders the prompts of prompts/ for the kernel at hand, asks the
/// configured model once, saves the exchange as the experiment's transcript, and reads the
/// answer (a hypothesis, a predicted time, a scratchpad, the whole file in a ```cuda block).
#include <mutex>
#include <optional>
#include <string>

#include "daemon/proposers/proposer.hpp"
#include "llm/llm_client.hpp"

namespace ak {

/// The prompt's size limit when the config sets none ([llm] max_prompt_bytes): about 25k tokens.
inline constexpr size_t kDefaultMaxPromptBytes = 100000;
/// The most of a user type's PyTorch reference shown (the size limit may cut it further).
inline constexpr size_t kReferenceSourceBytes = 20000;

/// The system prompt and the experiment's message for a proposal context: every outside text in
/// a fence it cannot close, the whole within ctx.max_prompt_bytes (llm/prompt_budget.hpp).
Result<ChatRequest> build_chat_request(const ProposalContext& ctx, int max_output_tokens);

class LlmProposer : public Proposer {
 public:
  /// `transcripts_dir` gets NNNN-<tag>.json per proposal; empty: no transcripts.
  LlmProposer(LlmClient& client, std::string transcripts_dir);
  Result<std::optional<Proposal>> propose(const ProposalContext& ctx) override;
  std::optional<std::string> must_stop() const override {
    std::lock_guard<std::mutex> l(mu_);
    return stop_reason_;
  }
  /// Questions asked at once when several GPUs wait for edits: `[llm] concurrency`.
  int concurrency() const override { return client_.config().concurrency; }

 private:
  mutable std::mutex mu_;
  LlmClient& client_;
  std::string transcripts_dir_;
  std::optional<std::string> stop_reason_;
};

}  // namespace ak
