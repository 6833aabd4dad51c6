#include <catch2/catch.hpp>

#include "daemon/proposers/prompt_guidance.hpp"

using namespace ak;

namespace {

ProposalContext at(double pct_peak, int reverts) {
  ProposalContext ctx;
  ctx.experiment = 12;
  ctx.pct_peak = pct_peak;
  ctx.budget = {6, reverts, 5, 1, 8, 0.9, 2.0, 0.25, 2.0};
  return ctx;
}

}  // namespace

TEST_CASE("the budget states the experiment, the reverts and broken proposals so far, and the stop rules", "[prompts][budget]") {
  const std::string t = budget_text(at(0.3, 2));
  CHECK_THAT(t, Catch::Contains("This is experiment 12 of the run, number 7 on this kernel."));
  CHECK_THAT(t, Catch::Contains("Reverts in a row: 2 of 5"));
  CHECK_THAT(t, Catch::Contains("Broken proposals in a row: 1 of 8"));
  CHECK_THAT(t, Catch::Contains("done at 90% of the measured peak once no slower than its baseline, at 2.00x over it, or after 2.00 h of GPU time (0.25 h spent)"));
}

TEST_CASE("the phase: radical when stuck at a low roofline fraction, combine wins late, explore otherwise", "[prompts][budget]") {
  CHECK_THAT(phase_text(at(0.3, 2)), Catch::StartsWith("Stuck: 30% of the roofline after 2 reverts in a row"));
  CHECK_THAT(phase_text(at(0.3, 1)), Catch::StartsWith("Explore"));
  CHECK_THAT(phase_text(at(0.85, 0)), Catch::StartsWith("Late: combine wins"));
  CHECK_THAT(phase_text(at(0.6, 3)), Catch::StartsWith("Late: combine wins"));
  ProposalContext first = at(0, 0);
  first.first_file = true;
  CHECK_THAT(phase_text(first), Catch::StartsWith("First file"));
  first.budget.first_tries = 2;
  first.budget.max_first_tries = 5;
  CHECK_THAT(budget_text(first), Catch::Contains("First files that failed so far: 2 of 5") && !Catch::Contains("Reverts in a row"));
}

namespace {

/// A history whose best (the standing baseline) was read as memory-bound, and a last candidate
/// whose counters were refused.
ProposalContext with_counters() {
  ProposalContext ctx = at(0.7, 1);
  PastExperiment best;
  best.experiment = 1;
  best.correctness = "PASS";
  best.latency_us = 103.2;
  best.kept = best.standing = true;
  best.move = MoveKind::Baseline;
  best.registers = 32;
  HardwareCounters c;
  c.passes = 5;
  c.dram_pct = 91.4, c.sm_pct = 30.2, c.achieved_occupancy_pct = 85, c.l2_hit_pct = 40, c.tensor_pct = 0;
  c.bank_conflict_ratio = 0.01;
  c.stalls = {{"long_scoreboard", 0.62}, {"selected", 0.2}, {"barrier", 0.1}};
  c.occupancy = OccupancyLimit{8, 100, "warps", 8, -1, 8, 32};
  best.counters = c;
  PastExperiment last;
  last.experiment = 2;
  last.correctness = "PASS";
  last.latency_us = 110;
  last.registers = 40;
  last.counters = HardwareCounters::unavailable_because("the driver lets only administrators read GPU performance counters");
  ctx.history = {best, last};
  return ctx;
}

}  // namespace

TEST_CASE("what limits the kernel: the best's and the last candidate's counters in an engineer's words", "[prompts][counters]") {
  const std::string t = limits_text(with_counters());
  CHECK_THAT(t, Catch::StartsWith("Current best (experiment 1, 103.20 us): memory-bound (at 91% of DRAM peak): fewer bytes, not more threads."));
  CHECK_THAT(t, Catch::Contains("32 registers, 0 bytes spilled; occupancy 85% of 100% possible (limited by warps); DRAM 91%, SM 30%, L2 hits 40%"));
  CHECK_THAT(t, Catch::Contains("warps: 62% waiting on global memory, 10% waiting at a barrier."));
  CHECK_THAT(t, !Catch::Contains("issuing") && !Catch::Contains("bank-conflict"));
  CHECK_THAT(t, Catch::Contains("\nLast candidate (experiment 2, 110.00 us): no counters: the driver lets only administrators"));
}

TEST_CASE("the limits section stays under 300 tokens with every reading present", "[prompts][counters]") {
  ProposalContext ctx = with_counters();
  ctx.history[1].counters = ctx.history[0].counters;
  ctx.history[1].counters->tensor_pct = 45;
  ctx.history[1].counters->bank_conflict_ratio = 0.6;
  ctx.history[1].spill_bytes = 1024;
  const std::string t = limits_text(ctx);
  CHECK_THAT(t, Catch::Contains("register-limited (40 registers a thread, 1024 bytes spilled)"));
  CHECK_THAT(t, Catch::Contains("60% of shared-memory traffic is bank-conflict replays"));
  // About four bytes a token in English; 1000 bytes stay well inside 300 tokens.
  CHECK(t.size() < 1000);
}

TEST_CASE("without counters the section says why in one line", "[prompts][counters]") {
  ProposalContext ctx = at(0.7, 1);
  CHECK(limits_text(ctx) == "No hardware counters yet: they come with the first verdict.");
  PastExperiment failed;
  failed.experiment = 4;
  failed.correctness = "FAIL";
  ctx.history = {failed};
  CHECK(limits_text(ctx) == "Last candidate (experiment 4): no counters recorded (it did not pass).");
}
