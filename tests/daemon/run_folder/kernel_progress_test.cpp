// The convergence rules as kernel_progress folds the rows: here the peak rule and the noise of the
// pairing that kept a best.
#include "daemon/run_folder/kernel_progress.hpp"

#include <catch2/catch.hpp>

namespace ak {
namespace {

/// One kernel with its starter measured at 100 us (60% of the peak).
std::vector<KernelProgress> one_kernel(KernelEntry& entry) {
  entry.type = "softmax";
  entry.weight = 1;
  KernelProgress k;
  k.tag = "softmax";
  k.entry = &entry;
  std::vector<KernelProgress> ks{k};
  ResultRow starter;
  starter.tag = "softmax";
  starter.latency_us = 100;
  starter.pct_peak = 0.60;
  starter.speedup = 1;
  starter.kept = true;
  starter.correctness = "PASS";
  starter.move = MoveKind::Baseline;
  apply_row(ks, starter);
  return ks;
}

ResultRow kept_at(double pct_peak, double noise) {
  ResultRow r;
  r.tag = "softmax";
  r.latency_us = 60 / pct_peak;
  r.pct_peak = pct_peak;
  r.speedup = 100 / r.latency_us;
  r.kept = true;
  r.correctness = "PASS";
  r.paired_ratio = 0.9;
  r.paired_noise = noise;
  return r;
}

}  // namespace

TEST_CASE("a best kept at 89.9% of the peak with a pairing noise of 0.8% has reached a 90% target, and says why", "[run_folder][convergence]") {
  KernelEntry entry;
  auto ks = one_kernel(entry);
  apply_row(ks, kept_at(0.899, 0.008));
  CHECK(ks[0].best_noise == Approx(0.008));
  const auto why = converged(ks[0], ConvergenceConfig{});
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("reached 89.9% of the measured peak (target 90%, within the noise of the pairing that kept it)"));
}

TEST_CASE("a best further below the target than its pairing's noise, or one above it, reads as before", "[run_folder][convergence]") {
  KernelEntry entry;
  auto ks = one_kernel(entry);
  apply_row(ks, kept_at(0.890, 0.008));
  CHECK_FALSE(converged(ks[0], ConvergenceConfig{}));
  apply_row(ks, kept_at(0.905, 0.001));
  REQUIRE(converged(ks[0], ConvergenceConfig{}));
  CHECK(*converged(ks[0], ConvergenceConfig{}) == "reached 90.5% of the measured peak (target 90%)");
}

TEST_CASE("a pairing too noisy to trust ends nothing early: the allowance stops at 2%", "[run_folder][convergence]") {
  KernelEntry entry;
  auto ks = one_kernel(entry);
  apply_row(ks, kept_at(0.85, 0.10));   // 0.85 x 1.10 would pass; 0.85 x 1.02 does not
  CHECK_FALSE(converged(ks[0], ConvergenceConfig{}));
  apply_row(ks, kept_at(0.885, 0.10));  // 0.885 x 1.02 = 0.9027
  CHECK(converged(ks[0], ConvergenceConfig{}));
}

TEST_CASE("a starter, or a best timed again alone, has no pairing: it must reach the target itself", "[run_folder][convergence]") {
  KernelEntry entry;
  auto ks = one_kernel(entry);
  CHECK(ks[0].best_noise == 0);
  apply_row(ks, kept_at(0.899, 0.008));
  ResultRow again = kept_at(0.898, 0);
  again.kept = false;
  again.correctness = kBestJudgedAgain;
  again.paired_noise = 0.009;   // whatever the row says, a best judged alone was not paired
  apply_row(ks, again);
  CHECK(ks[0].best_noise == 0);
  CHECK_FALSE(converged(ks[0], ConvergenceConfig{}));
}

}  // namespace ak
