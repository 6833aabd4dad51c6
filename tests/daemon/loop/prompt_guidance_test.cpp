#include <catch2/catch.hpp>

#include "daemon/loop/prompt_guidance.hpp"

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
  CHECK_THAT(t, Catch::Contains("done at 90% of the measured peak, at 2.00x over its baseline, or after 2.00 h of GPU time (0.25 h spent)"));
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
