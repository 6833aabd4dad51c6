#include "daemon/proposers/variant_moves.hpp"

#include <algorithm>
#include <set>

#include "daemon/proposers/knob_constraints.hpp"
#include "daemon/proposers/knobs.hpp"
#include "kernels_cuda/contract_version.hpp"
#include "kernels_cuda/variants.hpp"

namespace ak {

int reverts_in_structure(const std::vector<PastExperiment>& history) {
  int n = 0;
  for (auto it = history.rbegin(); it != history.rend() && !it->kept; ++it)
    if (it->move != MoveKind::Structure) ++n;
  return n;
}

std::string configuration_key(const std::string& source) {
  return variant_name(source) + " " + knob_key(read_knobs(source));
}

std::string carry_knobs(const std::string& from, const std::string& from_defaults, const std::string& variant) {
  const Knobs old = read_knobs(from), untuned = read_knobs(from_defaults);
  std::string out = variant;
  // Threads per block first, the knob the others are fractions of (rows per block, warps).
  std::vector<std::pair<std::string, long long>> knobs;
  for (auto& kv : read_knobs(variant)) knobs.push_back(kv);
  std::stable_partition(knobs.begin(), knobs.end(), [](auto& kv) { return kv.first.find("THREADS") != std::string::npos; });
  for (auto& [name, value] : knobs) {
    auto it = old.find(name);
    if (it == old.end() || it->second == value) continue;
    if (auto d = untuned.find(name); d != untuned.end() && d->second == it->second) continue;
    Knobs next = read_knobs(out);
    next[name] = it->second;
    if (!broken_assert(out, next)) out = with_knob(out, name, it->second);
  }
  return out;
}

namespace {

Proposal move(const std::string& from, const KernelVariant& to, const std::string& source, const std::string& how) {
  Proposal p;
  p.source = source;
  p.move = MoveKind::Structure;
  p.description = std::string(kStructureMove) + variant_name(from) + " -> " + to.name + " (" + how + "): " + to.story;
  return p;
}

}  // namespace

std::optional<Proposal> next_variant_move(const ProposalContext& ctx, bool knobs_left) {
  if (!ctx.spec) return std::nullopt;
  const bool structure_limited = ctx.pct_peak > 0 && ctx.pct_peak < kStructureLimited;
  if (knobs_left && !structure_limited && reverts_in_structure(ctx.history) < kSwitchAfterReverts) return std::nullopt;

  std::set<std::string> tried_names, measured;
  auto note = [&](const std::string& src) {
    tried_names.insert(variant_name(src));
    measured.insert(configuration_key(src));
  };
  for (auto& e : ctx.history) note(e.source);
  for (auto& e : ctx.in_flight) note(e.source);
  note(ctx.best_source);

  // Only the structures written for the contract version of the kept file: a file of another
  // version takes other arguments and could not be judged beside it.
  std::vector<KernelVariant> variants;
  for (auto& v : kernel_variants(ctx.spec->type))
    if (declared_contract_version(*v.source).value_or(0) == ctx.spec->contract_version) variants.push_back(v);
  std::string defaults;   // a file of no known structure: every value counts as tuned
  for (auto& v : variants)
    if (v.name == variant_name(ctx.best_source)) defaults = *v.source;
  // First every structure not yet tried, with the knobs carried over; then, for one that lost
  // that way, its own defaults: a carried block size can suit the old structure and not the new.
  for (auto& v : variants)
    if (!tried_names.count(v.name)) {
      const std::string carried = carry_knobs(ctx.best_source, defaults, *v.source);
      return move(ctx.best_source, v, carried, carried == *v.source ? "its own knobs" : "knobs carried over");
    }
  for (auto& v : variants)
    if (!measured.count(configuration_key(*v.source)) && variant_name(ctx.best_source) != v.name)
      return move(ctx.best_source, v, *v.source, "its own knobs");
  return std::nullopt;
}

}  // namespace ak
