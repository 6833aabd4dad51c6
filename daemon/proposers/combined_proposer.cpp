#include "daemon/proposers/combined_proposer.hpp"

#include "daemon/proposers/experiment_ledger.hpp"

namespace ak {

bool CombinedProposer::tuner_turn(const ProposalContext& ctx) {
  if (ctx.first_file || ctx.best_source.empty()) return false;
  int since_keep = int(ctx.in_flight.size());
  for (auto it = ctx.history.rbegin(); it != ctx.history.rend() && !it->kept; ++it)
    if (!is_daemon_event(*it)) ++since_keep;
  return since_keep < kTunerTurnsPerBest;
}

Result<std::optional<Proposal>> CombinedProposer::propose(const ProposalContext& ctx) {
  if (tuner_turn(ctx)) {
    // A file without knobs, or knobs all measured: the turn is the LLM's.
    auto tuned = tuner_.propose(ctx);
    if (tuned && *tuned) return tuned;
  }
  return llm_.propose(ctx);
}

Proposer& configured_proposer(const LlmConfig& llm_config, Proposer& tuner, Proposer& llm, CombinedProposer& both) {
  if (llm_config.provider == ProviderKind::Builtin) return tuner;
  return llm_config.with_tuner ? static_cast<Proposer&>(both) : llm;
}

}  // namespace ak
