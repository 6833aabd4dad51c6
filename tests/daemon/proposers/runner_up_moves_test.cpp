// The builtin tuner's runner-up moves: a structure that lost by little gets knob moves of its own
// before the kernel ends.
#include "daemon/proposers/runner_up_moves.hpp"

#include <catch2/catch.hpp>

#include "daemon/proposers/builtin_tuner.hpp"
#include "daemon/proposers/knobs.hpp"
#include "daemon/proposers/variant_moves.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"

namespace ak {
namespace {

const std::string& variant_source(const std::string& type, const std::string& name) {
  for (auto& v : kernel_variants(type))
    if (v.name == name) return *v.source;
  FAIL("no variant " << name << " of " << type);
  static std::string none;
  return none;
}

PastExperiment row(const std::string& description, const std::string& source, double us, bool kept, MoveKind move) {
  PastExperiment e{description, source, "PASS", us, kept, ""};
  e.move = move;
  e.standing = kept;
  return e;
}

/// layernorm as two runs of the scaling measurement left it: row_in_registers kept at 95.4 us,
/// rows_per_warp kept beside it at 93.6 us, then `reverts` knob moves of rows_per_warp reverted.
ProposalContext layernorm_after_reverts(int reverts, double runner_us = 95.4) {
  ProposalContext ctx;
  ctx.spec = find_spec("layernorm");
  ctx.pct_peak = 0.68;
  const std::string& registers = variant_source("layernorm", "row_in_registers");
  const std::string& per_warp = variant_source("layernorm", "rows_per_warp");
  ctx.history.push_back(row("baseline: the starter", ctx.spec->starter_source(), 100.4, true, MoveKind::Baseline));
  ctx.history.push_back(row("structure: starter -> row_in_registers", registers, runner_us, true, MoveKind::Structure));
  ctx.history.push_back(row("structure: row_in_registers -> rows_per_warp", per_warp, 93.6, true, MoveKind::Structure));
  ctx.best_source = per_warp;
  ctx.best_us = 93.6;
  BuiltinTuner t;
  for (int i = 0; i < reverts; ++i) {
    auto p = t.propose(ctx);
    REQUIRE(p.ok());
    REQUIRE(p->has_value());
    REQUIRE((*p)->move == MoveKind::Edit);
    REQUIRE(variant_name((*p)->source) == "rows_per_warp");
    ctx.history.push_back(row((*p)->description, (*p)->source, 104, false, MoveKind::Edit));
  }
  return ctx;
}

Proposal propose(const ProposalContext& ctx) {
  BuiltinTuner t;
  auto p = t.propose(ctx);
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  return **p;
}

int knobs_changed(const std::string& a, const std::string& b) {
  const Knobs ka = read_knobs(a), kb = read_knobs(b);
  int n = 0;
  for (auto& [name, value] : ka) n += kb.count(name) && kb.at(name) != value;
  return n;
}

}  // namespace

TEST_CASE("after three reverts with every variant tried, a structure 1.9% behind the best gets a knob move of its own", "[tuner][runner-up]") {
  ProposalContext ctx = layernorm_after_reverts(kSwitchAfterReverts);
  REQUIRE(runner_up(ctx));
  CHECK(variant_name(runner_up(ctx)->source) == "row_in_registers");
  const Proposal p = propose(ctx);
  CHECK(p.move == MoveKind::Structure);   // not a revert of rows_per_warp when it loses
  CHECK(variant_name(p.source) == "row_in_registers");
  CHECK(knobs_changed(p.source, variant_source("layernorm", "row_in_registers")) == 1);
  CHECK_THAT(p.description, Catch::StartsWith("structure: rows_per_warp -> row_in_registers (the runner-up, 1.9% behind the best, with tier "));
}

TEST_CASE("before the best's structure has three reverts, its own knobs go on", "[tuner][runner-up]") {
  ProposalContext ctx = layernorm_after_reverts(kSwitchAfterReverts - 1);
  const Proposal p = propose(ctx);
  CHECK(p.move == MoveKind::Edit);
  CHECK(variant_name(p.source) == "rows_per_warp");
}

TEST_CASE("a runner-up gets three moves, each a configuration not yet measured, then the best's knobs end the kernel", "[tuner][runner-up]") {
  ProposalContext ctx = layernorm_after_reverts(kSwitchAfterReverts);
  std::set<std::string> sources;
  for (int i = 0; i < kRunnerUpMoves; ++i) {
    const Proposal p = propose(ctx);
    REQUIRE(p.move == MoveKind::Structure);
    CHECK(sources.insert(p.source).second);
    ctx.history.push_back(row(p.description, p.source, 99, false, p.move));
  }
  CHECK(runner_up_moves_made(ctx) == kRunnerUpMoves);
  CHECK(reverts_in_structure(ctx.history) == kSwitchAfterReverts);   // the runner-up's losses are no reverts
  const Proposal after = propose(ctx);
  CHECK(after.move == MoveKind::Edit);
  CHECK(variant_name(after.source) == "rows_per_warp");
}

TEST_CASE("one in flight on another GPU counts, and a structure more than 5% behind is no runner-up", "[tuner][runner-up]") {
  ProposalContext ctx = layernorm_after_reverts(kSwitchAfterReverts);
  const Proposal first = propose(ctx);
  ctx.in_flight.push_back(row(first.description, first.source, 0, false, first.move));
  CHECK(runner_up_moves_made(ctx) == 1);
  CHECK(propose(ctx).source != first.source);

  ProposalContext far = layernorm_after_reverts(kSwitchAfterReverts, 98.5);   // 5.2% behind 93.6
  CHECK_FALSE(runner_up(far));
  CHECK(propose(far).move == MoveKind::Edit);
}

TEST_CASE("a runner-up that kept its place becomes the best, and the structure it left is the runner-up now", "[tuner][runner-up]") {
  ProposalContext ctx = layernorm_after_reverts(kSwitchAfterReverts);
  const Proposal p = propose(ctx);
  for (auto& e : ctx.history) e.standing = false;
  ctx.history.push_back(row(p.description, p.source, 90.9, true, p.move));
  ctx.best_source = p.source;
  ctx.best_us = 90.9;
  REQUIRE(runner_up(ctx));
  CHECK(variant_name(runner_up(ctx)->source) == "rows_per_warp");
  // A keep starts the structure's reverts again: its own knobs come first.
  CHECK(reverts_in_structure(ctx.history) == 0);
  const Proposal next = propose(ctx);
  CHECK(next.move == MoveKind::Edit);
  CHECK(variant_name(next.source) == "row_in_registers");
}

}  // namespace ak
