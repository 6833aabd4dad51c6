#include "daemon/loop/scheduler.hpp"

#include <cmath>
#include <cstdio>

namespace ak {

double expected_gain(const KernelProgress& k) {
  const double share_now = k.entry->weight / std::max(k.speedup(), 1e-9);
  const double headroom = std::max(0.0, 1.0 - k.best_pct_peak);
  return share_now * headroom * std::pow(0.7, k.consecutive_reverts + k.in_flight);
}

bool reverts_spoken_for(const KernelProgress& k, const ConvergenceConfig& c) {
  return k.consecutive_reverts > 0 && k.in_flight > 0 && k.consecutive_reverts + k.in_flight >= c.max_consecutive_reverts;
}

Pick pick_next(const std::vector<KernelProgress>& kernels, const ConvergenceConfig& c, const std::string& model) {
  Pick p;
  auto held_elsewhere = [&](const KernelProgress& k) { return !model.empty() && !k.model.empty() && k.model != model; };
  for (size_t i = 0; i < kernels.size(); ++i)
    if (!kernels[i].has_baseline && kernels[i].in_flight == 0 && !held_elsewhere(kernels[i]) && !converged(kernels[i], c)) {
      p.index = int(i);
      p.reason = kernels[i].llm_writes_first
                     ? kernels[i].tag + ": asking the LLM for its first file (try " + std::to_string(kernels[i].first_tries + 1) + " of " +
                           std::to_string(c.first_candidate_tries) + ")"
                     : kernels[i].tag + ": measuring its starter first (experiment 0 of this kernel)";
      return p;
    }
  double best = -1;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelProgress& k = kernels[i];
    if (!k.has_baseline || k.waiting || held_elsewhere(k) || converged(k, c) || reverts_spoken_for(k, c)) continue;
    double g = expected_gain(k);
    if (g > best) {
      best = g;
      p.index = int(i);
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "%s: largest expected gain %.4f of the program's time (share %.3f now at %.2fx, "
                    "%.0f%% of peak, %d reverts in a row, %d in flight)",
                    k.tag.c_str(), g, k.entry->weight / std::max(k.speedup(), 1e-9), k.speedup(),
                    k.best_pct_peak * 100, k.consecutive_reverts, k.in_flight);
      p.reason = buf;
    }
  }
  if (p.index < 0) {
    bool busy = false, open = false;
    for (auto& k : kernels) busy = busy || k.in_flight > 0, open = open || !converged(k, c);
    p.waits_for_flight = busy && open;
    p.reason = p.waits_for_flight ? "every open kernel waits for its experiments in flight" : "every kernel has converged";
  }
  return p;
}

}  // namespace ak
