#include <catch2/catch.hpp>

#include "daemon/loop/scheduler.hpp"
#include "kernels_cuda/registry.hpp"

using namespace ak;

namespace {
KernelProgress kernel(const KernelEntry& e, double speedup, double pct, int reverts) {
  KernelProgress k;
  k.tag = e.type;
  k.entry = &e;
  k.spec = find_spec(e.type);
  k.has_baseline = true;
  k.baseline_us = 100 * speedup;
  k.best_us = 100;
  k.best_pct_peak = pct;
  k.consecutive_reverts = reverts;
  return k;
}
}  // namespace

TEST_CASE("the kernel with the largest expected end-to-end gain goes next", "[scheduler]") {
  KernelEntry big{"softmax", {8192, 8192}, "fp16", 0.6}, small{"rmsnorm", {8192, 8192}, "fp16", 0.1};
  ConvergenceConfig c;
  std::vector<KernelProgress> ks{kernel(small, 1.0, 0.5, 0), kernel(big, 1.0, 0.5, 0)};
  CHECK(pick_next(ks, c).index == 1);
  // Close to its roofline, the big one has less left to give than the small one far from it.
  ks[1].best_pct_peak = 0.95;
  CHECK(pick_next(ks, c).index == 0);
  CHECK_THAT(pick_next(ks, c).reason, Catch::Contains("rmsnorm: largest expected gain"));
}

TEST_CASE("reverts in a row move the effort elsewhere", "[scheduler]") {
  KernelEntry a{"softmax", {8192, 8192}, "fp16", 0.3}, b{"rmsnorm", {8192, 8192}, "fp16", 0.2};
  ConvergenceConfig c;
  std::vector<KernelProgress> ks{kernel(a, 1.0, 0.5, 0), kernel(b, 1.0, 0.5, 0)};
  CHECK(pick_next(ks, c).index == 0);
  ks[0].consecutive_reverts = 2;   // 0.3 * 0.49 < 0.2
  CHECK(pick_next(ks, c).index == 1);
}

TEST_CASE("kernels without a baseline come first, and converged ones never", "[scheduler]") {
  KernelEntry a{"softmax", {8192, 8192}, "fp16", 0.3}, b{"rmsnorm", {8192, 8192}, "fp16", 0.2};
  ConvergenceConfig c;
  std::vector<KernelProgress> ks{kernel(a, 1.0, 0.5, 0), kernel(b, 1.0, 0.5, 0)};
  ks[1].has_baseline = false;
  CHECK(pick_next(ks, c).index == 1);
  ks[1].has_baseline = true;
  ks[0].consecutive_reverts = 5;
  ks[1].best_pct_peak = 0.95;
  auto p = pick_next(ks, c);
  CHECK(p.index == -1);
  CHECK(p.reason == "every kernel has converged");
  CHECK_FALSE(p.waits_for_flight);
  ks[0].in_flight = 1;   // converged, its last experiment still running: nothing waits on it
  CHECK_FALSE(pick_next(ks, c).waits_for_flight);
}

TEST_CASE("the Amdahl estimate of the whole program", "[scheduler]") {
  KernelEntry a{"softmax", {8192, 8192}, "fp16", 0.5}, b{"rmsnorm", {8192, 8192}, "fp16", 0.25};
  std::vector<KernelProgress> ks{kernel(a, 2.0, 0.5, 0), kernel(b, 1.0, 0.5, 0)};
  // 0.25 untouched + 0.5 / 2 + 0.25 / 1 = 0.75
  CHECK(amdahl_speedup(ks) == Approx(1 / 0.75));
}

TEST_CASE("experiments in flight damp a kernel's gain and a starter being measured is not picked twice", "[scheduler][parallel]") {
  KernelEntry a{"rmsnorm", {1024, 1024}, "fp16", 0.5};
  KernelEntry b{"softmax", {1024, 1024}, "fp16", 0.4};
  std::vector<KernelProgress> ks{kernel(a, 1, 0.3, 0), kernel(b, 1, 0.3, 0)};
  CHECK(pick_next(ks, ConvergenceConfig{}).index == 0);
  ks[0].in_flight = 1;   // 0.5 * 0.7 < 0.4: the free GPU goes to the other kernel
  CHECK(pick_next(ks, ConvergenceConfig{}).index == 1);
  ks[1].waiting = true;  // its proposer has nothing beside what is in flight
  CHECK(pick_next(ks, ConvergenceConfig{}).index == 0);
  ks[0].waiting = true;
  auto none = pick_next(ks, ConvergenceConfig{});
  CHECK(none.index == -1);
  CHECK(none.reason == "every open kernel waits for its experiments in flight");
  CHECK(none.waits_for_flight);
  std::vector<KernelProgress> fresh{kernel(a, 1, 0.3, 0), kernel(b, 1, 0.3, 0)};
  fresh[0].has_baseline = fresh[1].has_baseline = false;
  fresh[0].in_flight = 1;
  CHECK(pick_next(fresh, ConvergenceConfig{}).index == 1);
  fresh[1].model = "NVIDIA A100";  // held to another model ([gpu] mixed_models = "per-kernel")
  CHECK(pick_next(fresh, ConvergenceConfig{}, "NVIDIA H100").index == -1);
}

TEST_CASE("a failing kernel gets no more experiments in flight than the reverts it has left, a kernel fresh from a keep gets every GPU",
          "[scheduler][parallel]") {
  KernelEntry a{"rmsnorm", {1024, 1024}, "fp16", 0.5};
  ConvergenceConfig c;   // five reverts in a row end a kernel
  std::vector<KernelProgress> ks{kernel(a, 1, 0.3, 3)};
  ks[0].in_flight = 1;
  CHECK(pick_next(ks, c).index == 0);   // 3 + 1 < 5: one more may run beside it
  ks[0].in_flight = 2;                  // were both reverted, the kernel would end: as on one GPU, no third
  CHECK(reverts_spoken_for(ks[0], c));
  auto none = pick_next(ks, c);
  CHECK(none.index == -1);
  CHECK(none.waits_for_flight);
  // Another open kernel takes the free GPU instead, however small its gain.
  KernelEntry small{"softmax", {1024, 1024}, "fp16", 0.01};
  ks.push_back(kernel(small, 1, 0.89, 0));
  CHECK(pick_next(ks, c).index == 1);
  // Fresh from a keep, no revert yet: eight in flight still leave it open to a ninth GPU.
  std::vector<KernelProgress> fresh{kernel(a, 1, 0.3, 0)};
  fresh[0].in_flight = 8;
  CHECK_FALSE(reverts_spoken_for(fresh[0], c));
  CHECK(pick_next(fresh, c).index == 0);
}
