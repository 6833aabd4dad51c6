#include "daemon/proposers/runner_up_moves.hpp"

#include <cstdio>

#include "daemon/proposers/variant_moves.hpp"
#include "kernels_cuda/contract_version.hpp"
#include "kernels_cuda/spec.hpp"
#include "kernels_cuda/variants.hpp"

namespace ak {
namespace {

/// The best's time: its experiment's, or the context's where the history lacks it.
double best_time_us(const ProposalContext& ctx) {
  const PastExperiment* best = current_best_experiment(ctx);
  return best && best->latency_us > 0 ? best->latency_us : ctx.best_us;
}

}  // namespace

const PastExperiment* runner_up(const ProposalContext& ctx) {
  const double best_us = best_time_us(ctx);
  if (best_us <= 0) return nullptr;
  const std::string best_structure = variant_name(ctx.best_source);
  const PastExperiment* fastest = nullptr;
  for (const PastExperiment& e : ctx.history) {
    if (e.correctness != "PASS" || e.latency_us <= 0 || e.source.empty()) continue;
    if (variant_name(e.source) == best_structure) continue;
    // A file of another contract version takes other arguments: it cannot be judged beside the best.
    if (ctx.spec && declared_contract_version(e.source).value_or(0) != ctx.spec->contract_version) continue;
    if (!fastest || e.latency_us < fastest->latency_us) fastest = &e;
  }
  if (!fastest || fastest->latency_us > best_us * (1 + kRunnerUpMargin)) return nullptr;
  return fastest;
}

int runner_up_moves_made(const ProposalContext& ctx) {
  int n = 0;
  for (const auto* list : {&ctx.history, &ctx.in_flight})
    for (const PastExperiment& e : *list)
      n += e.move == MoveKind::Structure && e.description.find(kRunnerUpWords) != std::string::npos;
  return n;
}

std::optional<Proposal> next_runner_up_move(const ProposalContext& ctx, bool knobs_left, const KnobMoveFrom& knob_move) {
  if (knobs_left && reverts_in_structure(ctx.history) < kSwitchAfterReverts) return std::nullopt;
  if (runner_up_moves_made(ctx) >= kRunnerUpMoves) return std::nullopt;
  const PastExperiment* runner = runner_up(ctx);
  if (!runner) return std::nullopt;
  ProposalContext as_if_best = ctx;
  as_if_best.best_source = runner->source;
  std::optional<Proposal> p = knob_move(as_if_best, *runner);
  if (!p) return std::nullopt;
  char behind[64];
  std::snprintf(behind, sizeof behind, "%.1f%% behind the best", (runner->latency_us / best_time_us(ctx) - 1) * 100);
  p->move = MoveKind::Structure;
  p->description = std::string(kStructureMove) + variant_name(ctx.best_source) + " -> " + variant_name(runner->source) + " " +
                   kRunnerUpWords + behind + ", with " + p->description + ")";
  return p;
}

}  // namespace ak
