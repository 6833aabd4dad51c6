#include <catch2/catch.hpp>

#include <set>

#include "daemon/proposers/builtin_tuner.hpp"
#include "daemon/proposers/knob_constraints.hpp"
#include "daemon/proposers/knobs.hpp"
#include "daemon/proposers/variant_moves.hpp"
#include "daemon/run_folder/kernel_progress.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"

using namespace ak;

namespace {

ProposalContext starter_context(const std::string& type, double pct_peak = 0.9) {
  ProposalContext ctx;
  ctx.spec = find_spec(type);
  ctx.best_source = ctx.spec->starter_source();
  ctx.pct_peak = pct_peak;
  ctx.history.push_back({"baseline: the starter", ctx.best_source, "PASS", 100, true, ""});
  return ctx;
}

bool is_structure_move(const Proposal& p) { return p.move == MoveKind::Structure; }

Proposal propose(BuiltinTuner& t, const ProposalContext& ctx) {
  auto p = t.propose(ctx);
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  return **p;
}

}  // namespace

TEST_CASE("each type lists its starter first, then variants with a name, a one-line story and knobs", "[variants]") {
  int types_with_variants = 0;
  for (auto* spec : all_specs()) {
    auto vs = kernel_variants(spec->type);
    INFO(spec->type);
    REQUIRE(!vs.empty());
    CHECK(vs[0].name == "starter");
    CHECK(*vs[0].source == spec->starter_source());
    types_with_variants += vs.size() > 1;
    for (size_t i = 1; i < vs.size(); ++i) {
      INFO(vs[i].name);
      CHECK(variant_name(*vs[i].source) == vs[i].name);
      CHECK(vs[i].story.size() > 20);
      CHECK(vs[i].story.find('\n') == std::string::npos);
      CHECK_FALSE(read_knobs(*vs[i].source).empty());
      CHECK_FALSE(broken_assert(*vs[i].source, read_knobs(*vs[i].source)));   // ships compilable
    }
  }
  CHECK(types_with_variants >= 7);
  CHECK(variant_name("// softmax starter: y = ...\n") == "starter");
  CHECK(variant_name("// softmax variant row_in_registers: the row read once\n") == "row_in_registers");
  CHECK(variant_name("") == "starter");
}

TEST_CASE("a kernel far under its peak switches structure before any knob move", "[variants][tuner]") {
  BuiltinTuner t;
  ProposalContext ctx = starter_context("matmul", 0.17);
  Proposal p = propose(t, ctx);
  CHECK(is_structure_move(p));
  CHECK(variant_name(p.source) == "mma_pipeline");
  // The starter's knobs were never tuned, so the variant keeps its own (128x128 tiles, not 64x64).
  CHECK(p.source == *kernel_variants("matmul")[1].source);
  CHECK_THAT(p.description, Catch::Contains("starter -> mma_pipeline (its own knobs)"));
  // Near the peak the knobs come first: the structure is not what holds it back.
  CHECK_FALSE(is_structure_move(propose(t, starter_context("matmul", 0.9))));
}

TEST_CASE("after three reverts in a structure the tuner tries every variant before its next knob", "[variants][tuner]") {
  BuiltinTuner t;
  ProposalContext ctx = starter_context("softmax");
  for (int i = 0; i < kSwitchAfterReverts; ++i) {
    Proposal p = propose(t, ctx);
    REQUIRE_FALSE(is_structure_move(p));
    ctx.history.push_back({p.description, p.source, "PASS", 101, false, "", p.move});
  }
  Proposal p = propose(t, ctx);
  REQUIRE(is_structure_move(p));
  CHECK(variant_name(p.source) == "row_in_registers");
  ctx.history.push_back({p.description, p.source, "PASS", 130, false, "", p.move});
  // The switch lost; it is not a revert of the structure. Each other variant is tried in turn,
  // and when all have lost the knobs go on where they were.
  CHECK(reverts_in_structure(ctx.history) == kSwitchAfterReverts);
  std::set<std::string> tried{variant_name(p.source)};
  Proposal next = propose(t, ctx);
  while (is_structure_move(next)) {
    REQUIRE(tried.insert(variant_name(next.source)).second);   // never the same variant twice
    ctx.history.push_back({next.description, next.source, "PASS", 130, false, "", next.move});
    next = propose(t, ctx);
  }
  CHECK(tried.size() == kernel_variants("softmax").size() - 1);
  CHECK(reverts_in_structure(ctx.history) == kSwitchAfterReverts);
  CHECK(variant_name(next.source) == "starter");
}

TEST_CASE("a tuned knob carries into the variant, an untuned one does not, and a loss is retried at the variant's own knobs", "[variants][tuner]") {
  BuiltinTuner t;
  ProposalContext ctx = starter_context("softmax");
  ctx.best_source = with_knob(with_knob(ctx.best_source, "AK_THREADS", 512), "AK_ROWS_PER_BLOCK", 2);
  ctx.history.push_back({"tier 1: AK_THREADS 256 -> 512", with_knob(ctx.history[0].source, "AK_THREADS", 512), "PASS", 99, true, ""});
  ctx.history.push_back({"tier 1: AK_ROWS_PER_BLOCK 1 -> 2", ctx.best_source, "PASS", 98, true, ""});
  for (int i = 0; i < kSwitchAfterReverts; ++i) ctx.history.push_back({"a knob", "", "PASS", 120, false, ""});
  Proposal carried = propose(t, ctx);
  REQUIRE(is_structure_move(carried));
  const Knobs k = read_knobs(carried.source), own = read_knobs(*kernel_variants("softmax")[1].source);
  CHECK(k.at("AK_THREADS") == 512);          // tuned in the starter
  CHECK(k.at("AK_ROWS_PER_BLOCK") == 2);     // tuned in the starter
  CHECK(k.at("AK_VEC") == own.at("AK_VEC")); // the starter's untuned 1 stays behind
  CHECK(k.at("AK_ROW_CAPACITY") == own.at("AK_ROW_CAPACITY"));
  CHECK_THAT(carried.description, Catch::Contains("knobs carried over"));
  ctx.history.push_back({carried.description, carried.source, "PASS", 130, false, "", carried.move});

  // Every structure not yet tried comes first; then the one that lost, at its own knobs.
  const std::string& variant_own = *kernel_variants("softmax")[1].source;
  Proposal own_knobs = propose(t, ctx);
  for (int other = 0; is_structure_move(own_knobs) && own_knobs.source != variant_own; ++other) {
    REQUIRE(other < 8);
    CHECK(variant_name(own_knobs.source) != variant_name(variant_own));
    ctx.history.push_back({own_knobs.description, own_knobs.source, "PASS", 130, false, "", own_knobs.move});
    own_knobs = propose(t, ctx);
  }
  REQUIRE(is_structure_move(own_knobs));
  CHECK(own_knobs.source == variant_own);
  ctx.history.push_back({own_knobs.description, own_knobs.source, "PASS", 130, false, "", own_knobs.move});
  // Both tried: the next structure move goes to another variant, never this one again.
  Proposal after = propose(t, ctx);
  if (is_structure_move(after)) CHECK(variant_name(after.source) != variant_name(own_knobs.source));
}

TEST_CASE("a carried knob that breaks the variant's static_asserts stays the variant's own", "[variants]") {
  const std::string& variant = *kernel_variants("softmax")[1].source;
  const std::string from = with_knob(find_spec("softmax")->starter_source(), "AK_THREADS", 64);
  const std::string tuned = with_knob(from, "AK_ROWS_PER_BLOCK", 4);   // 64 / 4 = 16 threads a row: no whole warp
  const std::string out = carry_knobs(tuned, find_spec("softmax")->starter_source(), variant);
  CHECK_FALSE(broken_assert(out, read_knobs(out)));
  CHECK(read_knobs(out).at("AK_THREADS") == 64);
  CHECK(read_knobs(out).at("AK_ROWS_PER_BLOCK") == read_knobs(variant).at("AK_ROWS_PER_BLOCK"));
}

TEST_CASE("once a variant is kept the tuner walks its own knobs", "[variants][tuner]") {
  BuiltinTuner t;
  ProposalContext ctx = starter_context("softmax");
  const std::string& variant = *kernel_variants("softmax")[1].source;
  ctx.history.push_back({std::string(kStructureMove) + "starter -> row_in_registers", variant, "PASS", 95, true, "", MoveKind::Structure});
  ctx.best_source = variant;
  bool capacity = false;
  for (int i = 0; i < 12; ++i) {
    Proposal p = propose(t, ctx);
    CHECK(variant_name(p.source) == "row_in_registers");
    capacity |= p.description.find("AK_ROW_CAPACITY") != std::string::npos;
    ctx.history.push_back({p.description, p.source, "PASS", 96, i % 2 == 0, "", p.move});
  }
  CHECK(capacity);   // a knob the starter does not have
}

TEST_CASE("a reverted structure switch does not count toward reverts in a row", "[variants][convergence]") {
  Config cfg;
  cfg.kernels.push_back(KernelEntry{});
  cfg.kernels[0].type = "softmax";
  auto ks = initial_progress(cfg);
  auto row = [](long long n, bool kept, const std::string& d, MoveKind move = MoveKind::Edit) {
    ResultRow r;
    r.move = move;
    r.experiment = n;
    r.tag = "softmax";
    r.latency_us = 100;
    r.kept = kept;
    r.description = d;
    return r;
  };
  apply_row(ks, row(0, true, baseline_description("the reference kernel"), MoveKind::Baseline));
  apply_row(ks, row(1, false, "tier 1: AK_THREADS 256 -> 128"));
  apply_row(ks, row(2, false, std::string(kStructureMove) + "starter -> row_in_registers (its own knobs): ...", MoveKind::Structure));
  apply_row(ks, row(2, false, std::string(kStructureMove) + "an LLM's words alone"));   // an edit: it counts
  apply_row(ks, row(3, false, "tier 1: AK_THREADS 256 -> 512"));
  CHECK(ks[0].consecutive_reverts == 3);
  CHECK(ks[0].experiments == 5);
}

TEST_CASE("the tuner switches a matmul to the ping-pong structure and tries its stream-K last wave", "[variants][tuner]") {
  BuiltinTuner t;
  // Far under its peak: structure moves first, one per structure not yet tried.
  ProposalContext ctx = starter_context("matmul", 0.17);
  std::set<std::string> structures;
  for (int i = 0; i < 8; ++i) {
    auto p = t.propose(ctx);
    REQUIRE(p.ok());
    if (!p->has_value()) break;
    if (is_structure_move(**p)) structures.insert(variant_name((*p)->source));
    ctx.history.push_back({(*p)->description, (*p)->source, "PASS", 120, false, "", (*p)->move, 2 + i});
  }
  CHECK(structures.count("tma_pingpong"));

  // Kept, the ping-pong file's knobs are tuned, stream-K among them (0 -> 1, the only other value its assert allows).
  ProposalContext kept;
  kept.spec = ctx.spec;
  kept.pct_peak = 0.9;
  const std::string* pingpong = nullptr;
  for (const auto& v : kernel_variants("matmul"))
    if (v.name == "tma_pingpong") pingpong = v.source;
  REQUIRE(pingpong);
  kept.best_source = *pingpong;
  // Its asserts are read: too many stages or too many accumulators never cost an experiment.
  Knobs too_deep = read_knobs(*pingpong), too_wide = too_deep;
  too_deep["AK_STAGES"] = 10;
  too_wide["AK_TILE_N"] = 256;
  CHECK_THAT(broken_assert(*pingpong, too_deep).value_or(""), Catch::Contains("more shared memory than a block can have"));
  CHECK_THAT(broken_assert(*pingpong, too_wide).value_or(""), Catch::Contains("at most 128 accumulators a thread"));
  kept.history.push_back({"baseline", *pingpong, "PASS", 100, true, ""});
  bool stream_k = false;
  for (int i = 0; i < 12 && !stream_k; ++i) {
    Proposal p = propose(t, kept);
    if (p.move != MoveKind::Structure) {
      INFO(p.description);
      CHECK_FALSE(broken_assert(p.source, read_knobs(p.source)));
      stream_k = read_knobs(p.source).at("AK_STREAM_K") == 1;
    }
    kept.history.push_back({p.description, p.source, "PASS", 110, false, "", p.move, 2 + i});
  }
  CHECK(stream_k);
}
