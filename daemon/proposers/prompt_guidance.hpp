#pragma once
/// The parts of a prompt that tell the model where it stands: its budget against the stop rules,
/// and the phase of the work (the playbook's phase rules), both from the kernel's numbers alone.
#include <string>

#include "daemon/proposers/proposer.hpp"

namespace ak {

/// Below this fraction of the roofline, with reverts piling up, small edits will not close the gap.
inline constexpr double kRadicalBelowPeak = 0.5;
inline constexpr int kRadicalAfterReverts = 2;
/// From this fraction of the roofline on, or this close to the reverts' cap, wins are combined.
inline constexpr double kCombineFromPeak = 0.8;

/// "This is experiment 12 of the run, the 7th on this kernel; reverts in a row: 2 of 5; ...".
std::string budget_text(const ProposalContext& ctx);

/// Which phase the kernel is in, and what that asks of the next proposal.
std::string phase_text(const ProposalContext& ctx);

/// "What limits this kernel now": the current best's and the last candidate's hardware counters
/// in an engineer's words, with ptxas's registers and spills beside them; a few lines (well
/// under 300 tokens), or one saying why there are none.
std::string limits_text(const ProposalContext& ctx);

}  // namespace ak
