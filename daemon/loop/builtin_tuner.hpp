#pragma once
/// The builtin tuner: the offline proposer. It changes one knob line of the current best file
/// per experiment, walking the playbook's tiers (block sizing, then vector width and memory
/// access, then the rest the file exposes), and switches to another of the type's variants
/// when the knobs of the current structure are used up or cannot be what limits it
/// (daemon/loop/variant_moves.hpp). It never proposes a configuration already measured, being
/// measured on another GPU, or breaking one of the file's static_asserts.
#include <set>

#include "daemon/loop/knobs.hpp"
#include "daemon/loop/proposer.hpp"

namespace ak {

class BuiltinTuner : public Proposer {
 public:
  Result<std::optional<Proposal>> propose(const ProposalContext& ctx) override;

  /// The values tried for a knob, nearest to `current` first.
  static std::vector<long long> candidates(const std::string& knob, long long current);
  /// The playbook tier of a knob: 1 block sizing, 2 memory access, 3 the rest.
  static int tier(const std::string& knob);

 private:
  /// One knob line of the best file changed, nearest values first; nullopt when none is left.
  static std::optional<Proposal> next_knob_move(const ProposalContext& ctx, const Knobs& best);
};

}  // namespace ak
