#include "daemon/run_folder/kernel_progress.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "kernels_cuda/registry.hpp"

namespace ak {

std::vector<KernelProgress> initial_progress(const Config& cfg) {
  std::map<std::string, int> count, seen;
  for (auto& k : cfg.kernels) count[k.type]++;
  std::vector<KernelProgress> out;
  for (auto& k : cfg.kernels) {
    KernelProgress p;
    p.entry = &k;
    p.spec = find_spec(k.type);
    p.tag = count[k.type] > 1 ? k.type + "-" + std::to_string(++seen[k.type]) : k.type;
    p.llm_writes_first = k.user_type && k.user_type->starter_source.empty();
    out.push_back(p);
  }
  return out;
}

std::optional<std::string> first_file_missing(const Config& cfg) {
  if (cfg.llm.provider != ProviderKind::Builtin) return std::nullopt;
  for (const KernelEntry& k : cfg.kernels)
    if (k.user_type && k.user_type->starter_source.empty())
      return cfg.path + ":" + std::to_string(k.line) + ": [[kernel]] of user type \"" + k.type + "\" (" + k.user_type->path +
             ") has no starter file, and the proposer is builtin: a user type needs an LLM or a starter file (starter = \"path.cu\" in its spec)";
  return std::nullopt;
}

namespace {
constexpr const char* kAgainst = "; speedups against ";
}

std::string baseline_description(const std::string& source) { return std::string("baseline: the starter") + kAgainst + source; }

void apply_row(std::vector<KernelProgress>& kernels, const ResultRow& row) {
  for (auto& k : kernels) {
    if (k.tag != row.tag) continue;
    k.experiments++;
    k.seconds += row.seconds;
    if (row.correctness == kHarnessError) {
      // says nothing of the candidate: counted, live, by the loop (harness_errors_in_a_row)
    } else if (!k.has_baseline && k.llm_writes_first && !row.kept) {
      // A first file of the LLM that failed: asked again, within the budget converged() counts.
      k.first_tries++;
      k.first_failure = row.correctness + (row.failure.empty() ? "" : ": " + row.failure);
    } else if (!k.has_baseline) {
      k.has_baseline = true;
      k.starter_failed = !row.kept;
      k.starter_failure = row.failure.empty() ? row.description : row.description + " -- " + row.failure;
      // A baseline row's description is the daemon's own (baseline_description), never a proposer's.
      const size_t at = row.move == MoveKind::Baseline ? row.description.find(kAgainst) : std::string::npos;
      k.baseline_source = at == std::string::npos ? "the harness's measurement" : row.description.substr(at + std::strlen(kAgainst));
      if (row.kept) {
        k.baseline_us = row.speedup > 0 ? row.speedup * row.latency_us : row.latency_us;
        k.best_us = row.latency_us;
        k.best_throughput = row.throughput;
        k.best_pct_peak = row.pct_peak;
        k.best_noise = 0;
      }
    } else if (row.correctness == kBestReplaced) {
      // judged a file that is no longer the best: neither a revert nor a best
    } else if (row.correctness == kBestJudgedAgain) {
      k.best_us = row.latency_us;   // the same file, timed again: what it takes now
      k.best_throughput = row.throughput;
      k.best_pct_peak = row.pct_peak;
      k.best_noise = 0;
    } else if (row.kept) {
      k.best_us = row.latency_us;
      k.best_throughput = row.throughput;
      k.best_pct_peak = row.pct_peak;
      k.best_noise = row.paired_noise;
      k.consecutive_reverts = 0;
      k.broken_in_a_row = 0;
    } else if (row.move != MoveKind::Structure && (row.correctness == "COMPILE_ERROR" || row.correctness == "NO_PROPOSAL")) {
      k.broken_in_a_row++;   // a broken proposal says nothing of the idea's speed: not a revert
    } else if (row.move != MoveKind::Structure) {
      if (row.correctness != kBestDemoted && row.correctness != "ERROR") k.broken_in_a_row = 0;
      k.consecutive_reverts++;   // reverts count within a structure: a tried switch is not one
    }
    return;
  }
}

std::vector<ResultRow> standing_bests(const std::vector<ResultRow>& rows, const std::string& tag) {
  std::vector<ResultRow> chain;
  for (const ResultRow& r : rows) {
    if (r.tag != tag) continue;
    if (r.correctness == kBestDemoted) {
      if (chain.size() > 1) chain.pop_back();   // the demoted best; the one before it stands again
    } else if (r.kept) {
      chain.push_back(r);
    }
  }
  return chain;
}

bool reaches_peak_fraction(const KernelProgress& k, const ConvergenceConfig& c) {
  // Two runs of one workload kept the same file at 90.1% and 89.9% of the peak, each within 0.8%
  // of the other: one stopped, the other tried seven more moves. The allowance is capped so that a
  // pairing too noisy to trust cannot end a kernel far below the target.
  const double noise = std::min(std::max(k.best_noise, 0.0), kPeakNoiseAllowanceCap);
  return k.best_pct_peak * (1.0 + noise) >= c.peak_fraction;
}

std::optional<std::string> converged(const KernelProgress& k, const ConvergenceConfig& c) {
  char buf[160];
  if (k.starter_failed) return "the starter itself fails: " + k.starter_failure;
  if (k.harness_errors_in_a_row >= kHarnessErrorsToStop)
    return "the harness could not judge its last " + std::to_string(k.harness_errors_in_a_row) +
           " candidates (the last: " + k.harness_failure + "); not the kernel's fault: fix what that names and start the run again";
  if (!k.has_baseline && k.llm_writes_first) {
    if (k.first_tries >= c.first_candidate_tries)
      return "no first file of the LLM passed in " + std::to_string(k.first_tries) + " tries (the last: " + k.first_failure + ")";
    if (k.proposer_exhausted) return "the proposer wrote no first file";
  }
  if (!k.has_baseline) return std::nullopt;
  if (k.consecutive_reverts >= c.max_consecutive_reverts)
    return std::to_string(k.consecutive_reverts) + " reverts in a row";
  if (k.broken_in_a_row >= c.max_broken_in_a_row)
    return std::to_string(k.broken_in_a_row) + " broken proposals in a row (files that did not compile, replies with no usable file)";
  // The peak rule says little headroom is left; a baseline still faster than the best (cuBLAS at
  // 95% of the peak against our 91%, PyTorch's time in a planned config) proves there is more.
  if (reaches_peak_fraction(k, c) && k.speedup() >= 1.0) {
    const bool within_noise = k.best_pct_peak < c.peak_fraction;
    std::snprintf(buf, sizeof buf, "reached %.1f%% of the measured peak (target %.0f%%%s)", k.best_pct_peak * 100,
                  c.peak_fraction * 100, within_noise ? ", within the noise of the pairing that kept it" : "");
    return std::string(buf);
  }
  if (k.seconds >= c.max_hours_per_kernel * 3600) {
    std::snprintf(buf, sizeof buf, "spent %.2f h on it (limit %.2f h)", k.seconds / 3600, c.max_hours_per_kernel);
    return std::string(buf);
  }
  if (k.speedup() >= c.target_speedup) {
    std::snprintf(buf, sizeof buf, "%.2fx over the baseline (target %.2fx)", k.speedup(), c.target_speedup);
    return std::string(buf);
  }
  if (k.proposer_exhausted) return "the proposer has nothing left to try";
  return std::nullopt;
}

double amdahl_speedup(const std::vector<KernelProgress>& kernels) {
  double rest = 1.0, now = 0;
  for (auto& k : kernels) {
    const double f = k.entry ? k.entry->weight : 0;
    rest -= f;
    now += f / (k.speedup() > 0 ? k.speedup() : 1.0);
  }
  return 1.0 / (std::max(rest, 0.0) + now);
}

}  // namespace ak
