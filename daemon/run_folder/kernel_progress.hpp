#pragma once
/// Where each kernel of a run stands, derived from the results table alone, so that a restart
/// (or a power cut) recovers it exactly: best time, reverts in a row, time spent, baseline.
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

struct KernelProgress {
  std::string tag;                    ///< the kernel's id in the run: file kernels/<tag>.cu
  const KernelEntry* entry = nullptr;
  const KernelSpec* spec = nullptr;
  bool has_baseline = false;          ///< experiment 0 (the starter) was measured
  bool starter_failed = false;
  std::string starter_failure;
  /// A user type with no starter file: its first file is the LLM's, asked again while it fails
  /// ([convergence] first_candidate_tries); the first that passes is the baseline.
  bool llm_writes_first = false;
  int first_tries = 0;                ///< first files that failed (rows before the baseline)
  std::string first_failure;          ///< what the last of them failed with
  double baseline_us = 0;             ///< what speedups are measured against
  /// What that is: "baseline_us in the config", "cuBLAS", "the starter" (the first row says).
  std::string baseline_source;
  double best_us = 0, best_throughput = 0, best_pct_peak = 0;
  /// The half-width of the pairing that kept the best, as a fraction (its row's paired_noise; 0
  /// for a starter or a best timed again alone). The peak rule allows it: a best this close
  /// below the target cannot be told from one just above it.
  double best_noise = 0;
  /// In memory only: the spread of the best's own launches when it was kept or judged again alone
  /// (capped; 0 after a restart, the strictest allowance, until it is judged again). A best is
  /// allowed this much noise beside a candidate, never the spread of the very pairing it could
  /// make noisy itself.
  double best_spread = 0;
  int experiments = 0;
  int consecutive_reverts = 0;
  /// Broken proposals in a row (COMPILE_ERROR, NO_PROPOSAL): neither reverts nor a reset of them,
  /// capped by [convergence] max_broken_in_a_row.
  int broken_in_a_row = 0;
  double seconds = 0;
  bool proposer_exhausted = false;    ///< in memory only: asking again is cheap and gives the same
  // In memory only, for several GPUs: what is being judged now.
  int in_flight = 0;                  ///< experiments of this kernel running
  bool waiting = false;               ///< the proposer had nothing new beside those in flight
  int best_version = 0;               ///< bumped at every keep: a verdict paired with an older best is stale
  std::string model;                  ///< the GPU model it is held to ([gpu] mixed_models = "per-kernel")
  bool best_to_rejudge = false;       ///< a pairing found the best slower than when it was kept
  bool best_rejudging = false;        ///< its verdict of its own is being made now
  /// In memory only, so that a restart after the harness is fixed tries again: HARNESS_ERROR rows
  /// in a row, and what the last said.
  int harness_errors_in_a_row = 0;
  std::string harness_failure;
  /// The device this kernel was last judged on, as its verdicts said (kept in state.json across
  /// restarts): the name, the arch, and the measured peak of the resource that bounds it.
  std::string gpu, arch, unit;
  double peak = 0;

  double speedup() const { return best_us > 0 ? baseline_us / best_us : 0; }
};

/// The correctness of a row that judged the current best again, alone (a pairing found it slower
/// than when it was kept, or failing its checks): it passed, and its time is what it takes now;
/// or it failed, and the best before it is the best again (the row carries that one's numbers,
/// and its commit puts that file back).
inline constexpr const char* kBestJudgedAgain = "BEST_PASS";
inline constexpr const char* kBestDemoted = "DEMOTED";
/// A best judged again that another GPU's keep replaced meanwhile: its verdict changes nothing.
inline constexpr const char* kBestReplaced = "BEST_REPLACED";

/// The correctness of a row whose candidate the harness could not judge (the reference process of
/// a user type failed, say), after it was judged again: neither a revert nor a first try.
inline constexpr const char* kHarnessError = "HARNESS_ERROR";
/// HARNESS_ERROR rows in a row that stop a kernel until the run is started again.
inline constexpr int kHarnessErrorsToStop = 2;

/// The rows of `tag` that made each best still standing, oldest first (the baseline, then each
/// keep not undone by a demotion); the last is the current best.
std::vector<ResultRow> standing_bests(const std::vector<ResultRow>& rows, const std::string& tag);

/// One entry per [[kernel]], with tags: the type, or type-N when a type appears more than once.
std::vector<KernelProgress> initial_progress(const Config& cfg);

/// Why `autokernel run` cannot start this config: a kernel of a user type with neither a starter
/// file nor an LLM to write its first file; nullopt when every kernel has a first file coming.
std::optional<std::string> first_file_missing(const Config& cfg);

/// The first row of a kernel: the starter, and what its speedups are measured against.
std::string baseline_description(const std::string& source);

/// Folds one row into the kernel it belongs to.
void apply_row(std::vector<KernelProgress>& kernels, const ResultRow& row);

/// The most of a best's pairing noise the peak rule allows (2%): a noisier pairing ends nothing early.
inline constexpr double kPeakNoiseAllowanceCap = 0.02;

/// Whether the best reaches [convergence] peak_fraction: its % of the peak, raised by the noise
/// of the pairing that kept it (best_noise, at most kPeakNoiseAllowanceCap).
bool reaches_peak_fraction(const KernelProgress& k, const ConvergenceConfig& c);

/// The first convergence rule that holds for a kernel, as a sentence; nullopt while it is open.
std::optional<std::string> converged(const KernelProgress& k, const ConvergenceConfig& c);

/// 1 / ((1 - sum f) + sum f / s): the whole program's speedup if only these kernels changed.
double amdahl_speedup(const std::vector<KernelProgress>& kernels);

}  // namespace ak
