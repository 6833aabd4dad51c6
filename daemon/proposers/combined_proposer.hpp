#pragma once
/// The builtin tuner and the LLM as one proposer ([llm] with_tuner = true): right after each new
/// best, the tuner takes the first kTunerTurnsPerBest turns (its knob sweeps of that file, or a
/// structure move where one is due), where a sweep pays and costs no tokens; every other turn,
/// and every turn the tuner has nothing for, is the LLM's edit on top of the best. Whose turn it
/// is follows from the results alone (the rows since the kernel's last keep), so a restart keeps
/// the order.
#include "config/config.hpp"
#include "daemon/proposers/proposer.hpp"

namespace ak {

inline constexpr int kTunerTurnsPerBest = 2;

class CombinedProposer : public Proposer {
 public:
  CombinedProposer(Proposer& tuner, Proposer& llm) : tuner_(tuner), llm_(llm) {}
  Result<std::optional<Proposal>> propose(const ProposalContext& ctx) override;
  std::optional<std::string> must_stop() const override { return llm_.must_stop(); }
  int concurrency() const override { return llm_.concurrency(); }

  /// Whether the tuner has the turn: fewer than kTunerTurnsPerBest experiments (recorded or in
  /// flight, the daemon's own events aside) since the kernel's last keep, and a file to tune.
  static bool tuner_turn(const ProposalContext& ctx);

 private:
  Proposer& tuner_;
  Proposer& llm_;
};

/// The proposer the config asks for: the tuner for provider "builtin", else the LLM, or both when
/// with_tuner is set.
Proposer& configured_proposer(const LlmConfig& llm_config, Proposer& tuner, Proposer& llm, CombinedProposer& both);

}  // namespace ak
