#pragma once
/// The builtin tuner's second look at a structure that lost by little. The tuner is greedy: a
/// switch kept by 2% ends the search of the structure it left, and a knob of that structure can
/// be worth far more. layernorm at 16384 x 4096: one run kept row_in_registers and found
/// AK_ROW_CAPACITY 4096 (68 us); two runs kept rows_per_warp at 0.977 of row_in_registers
/// (93.6 us against 95.4) and ended there, 37% slower. So once the best's structure has
/// kSwitchAfterReverts reverts in a row (or no knob move left) and every variant was tried, the
/// fastest passing configuration of another structure within kRunnerUpMargin of the best gets a
/// knob move of its own, proposed as a structure move back to it: at most kRunnerUpMoves a
/// kernel. Structure moves are not reverts, so this delays a kernel's end by that many at most.
#include <functional>
#include <optional>

#include "daemon/proposers/proposer.hpp"

namespace ak {

inline constexpr double kRunnerUpMargin = 0.05;
inline constexpr int kRunnerUpMoves = 3;
/// How a runner-up move's description names it (after kStructureMove and the two structures).
inline constexpr const char* kRunnerUpWords = "(the runner-up, ";

/// The fastest passed experiment of a structure other than the best's, when its time is within
/// kRunnerUpMargin of the best's; null otherwise (or when the best's time is unknown).
const PastExperiment* runner_up(const ProposalContext& ctx);

/// Runner-up moves this kernel has had, judged or in flight.
int runner_up_moves_made(const ProposalContext& ctx);

/// A knob move of the file `from`, the best of the context it is given (the tuner's own).
using KnobMoveFrom = std::function<std::optional<Proposal>(const ProposalContext& as_if_best, const PastExperiment& from)>;

/// The next runner-up move, when one is due: the best's structure has kSwitchAfterReverts reverts
/// in a row or `knobs_left` is false, fewer than kRunnerUpMoves were made, a runner-up exists and
/// `knob_move` has a configuration of it not yet measured.
std::optional<Proposal> next_runner_up_move(const ProposalContext& ctx, bool knobs_left, const KnobMoveFrom& knob_move);

}  // namespace ak
