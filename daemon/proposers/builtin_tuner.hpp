#pragma once
/// The builtin tuner: the offline proposer. It changes one knob line of the current best file
/// per experiment, walking the playbook's tiers (block sizing, then vector width and memory
/// access, then the rest the file exposes), and switches to another of the type's variants
/// when the knobs of the current structure are used up or cannot be what limits it
/// (daemon/proposers/variant_moves.hpp). With the best's hardware counters it first tries the knobs
/// that address what limits it (daemon/proposers/bottleneck.hpp), and the description of such a move
/// names the reading that chose it; `[tuner] order_by_counters = false` keeps the playbook order
/// whatever the counters say (to measure what that order saves). It never proposes a
/// configuration already measured, being measured on another GPU, or breaking one of the file's
/// static_asserts.
#include <set>

#include "daemon/proposers/bottleneck.hpp"
#include "daemon/proposers/knobs.hpp"
#include "daemon/proposers/proposer.hpp"

namespace ak {

class BuiltinTuner : public Proposer {
 public:
  explicit BuiltinTuner(bool order_by_counters = true) : order_by_counters_(order_by_counters) {}
  Result<std::optional<Proposal>> propose(const ProposalContext& ctx) override;

  /// The values tried for a knob, nearest to `current` first.
  static std::vector<long long> candidates(const std::string& knob, long long current);
  /// The playbook tier of a knob: 1 block sizing, 2 memory access, 3 the rest.
  static int tier(const std::string& knob);
  /// Whether a knob works on what `limit` says binds (a memory-bound kernel: vector width and the
  /// bytes moved; register-limited: per-thread tiles and vectors; stalled on barriers: stages).
  static bool addresses(const std::string& knob, Limit limit);
  /// Whether a knob's larger values come first under `limit` (more stages against barrier
  /// stalls, wider vectors against memory); otherwise nearest first, smaller first when
  /// register-limited.
  static bool prefers_larger(const std::string& knob, Limit limit);
  /// What the counters of the current best's verdict say limits it (Unknown without them).
  static Bottleneck best_bottleneck(const ProposalContext& ctx);

 private:
  /// One knob line of the best file changed, nearest values first, the knobs that address `limit`
  /// before the others; nullopt when none is left.
  static std::optional<Proposal> next_knob_move(const ProposalContext& ctx, const Knobs& best, const Bottleneck& limit);

  bool order_by_counters_;
};

}  // namespace ak
