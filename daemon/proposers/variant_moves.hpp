#pragma once
/// The builtin tuner's structure moves: switching a kernel to another of its type's variants
/// (kernels_cuda/variants.hpp) when knobs cannot close the gap. A switch is chosen when the
/// current structure's knob moves are used up, when it has kSwitchAfterReverts reverts in a row,
/// or at once when the kernel runs under kStructureLimited of its peak (the structure, not a
/// knob, is the limit). Tuned knob values carry over where the names match and the variant's
/// static_asserts allow; a variant that lost with carried knobs is tried once at its own defaults.
#include <optional>
#include <string>
#include <vector>

#include "daemon/proposers/proposer.hpp"

namespace ak {

/// Reverts in a row at the end of a kernel's history within its current structure: a tried
/// structure move (MoveKind::Structure) neither counts nor breaks the run.
int reverts_in_structure(const std::vector<PastExperiment>& history);

/// "name AK_X=1 AK_Y=2": a configuration's identity across structures.
std::string configuration_key(const std::string& source);

/// `variant` with the tuned knob values of `from` (those that differ from `from_defaults`, the
/// file its structure started as) where the names match, each kept only if the variant's
/// static_asserts still hold. Untuned values stay the variant's own: a starter's plain 64x64
/// tile says nothing about what suits an mma.sync pipeline.
std::string carry_knobs(const std::string& from, const std::string& from_defaults, const std::string& variant);

/// Under this fraction of the measured peak, a kernel is taken to be limited by its structure:
/// a memory-bound starter that reads its row two or three times sits at 45-82% of the bandwidth,
/// the row-in-registers variants at 97%; the tensor-core starters at 2-17% of the tensor peak.
/// The variants are few, so trying each once before the knobs costs a few experiments.
inline constexpr double kStructureLimited = 0.85;
inline constexpr int kSwitchAfterReverts = 3;

/// The next structure move for this kernel, if a switch is due and a variant is left to try.
/// `knobs_left`: whether the current structure still has a knob move.
std::optional<Proposal> next_variant_move(const ProposalContext& ctx, bool knobs_left);

}  // namespace ak
