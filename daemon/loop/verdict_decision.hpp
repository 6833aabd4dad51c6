#pragma once
/// What the loop makes of a verdict, decided apart from its recording: from the verdict, the
/// finished job, the kernel's progress and the keep threshold alone (no file, no git, no clock),
/// so that every branch of the keep rule can be tested on its own. RunLoop records what these
/// decide: it commits a kept file, appends the row, updates the state (daemon/loop/run_loop.hpp).
#include <string>
#include <vector>

#include "daemon/loop/experiment_job.hpp"
#include "daemon/run_folder/kernel_progress.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "harness/judging/verdict.hpp"

namespace ak {

/// The keep rule for a candidate that passed: when the harness timed it beside the best, the
/// paired ratio must clear the threshold by more than its noise; an evaluator that times alone
/// (a scripted one) is judged on its median against the recorded best.
bool faster_than_best(const Verdict& v, double best_us, double keep_threshold);

/// Why the best timed beside a candidate cannot be trusted in that pairing: it failed its own
/// checks there, it ran slower than the time it was kept at by more than kBestSlowdownAllowance
/// plus the spread it had when kept (`kept_spread`), or its launches spread wider than then by
/// more than kBestNoiseAllowance; "" when it can. A best that sandbags, or makes its own timing
/// noisy, when paired would otherwise make every candidate look fast.
std::string best_out_of_line(const Verdict& v, double kept_us, double kept_spread);
inline constexpr double kBestSlowdownAllowance = 0.05;
inline constexpr double kBestNoiseAllowance = 0.05;
/// The most spread a best is credited with: a file that times noisily buys no wider allowance.
inline constexpr double kKeptSpreadCap = 0.05;
/// The spread of a kept (or re-judged) file's own launches, as best_out_of_line credits it.
double kept_spread(const Verdict& v);

/// The decision on a candidate's verdict (a baseline or an edit; not the best judged again).
struct CandidateDecision {
  /// Paired with a best that another GPU replaced while it ran (never a baseline).
  bool stale = false;
  /// Stale, passed, and faster than the best it was paired with: judged again beside the new
  /// best; nothing is recorded now.
  bool judge_again = false;
  /// Passed, faster than the threshold by its ratio but not beyond its noise, on its first
  /// pairing: judged again with kNoisyRepetitionsFactor times the launches; nothing is recorded
  /// now. One noisy pairing would otherwise revert a real gain for good, and with it every later
  /// step of the kernel's search (measured: a move kept on one GPU at 0.976 ± 0.004 was reverted
  /// beside three other GPUs at 0.983 ± 0.015, and the kernel converged 1.5% slower).
  bool judge_again_noisy = false;
  bool keep = false;   ///< its file becomes the kernel's best
  /// Why the best timed beside it cannot be trusted ("" when it can): nothing is kept on that
  /// pairing, and the best is judged again on its own.
  std::string doubt;
  /// The row to record: its status (correctness), kept, description, failure, pairing and
  /// prediction. Its seconds and commit are the recording's.
  ResultRow row;
  /// What the commit message compares the kept time with: the best before it, 0 for a baseline.
  double previous_best_us = 0;
};
CandidateDecision decide_candidate(const ExperimentJob& job, const Verdict& v, const KernelProgress& k,
                                   double keep_threshold);
/// How many more launches a noisy pairing's second look gets: the noise of a median ratio
/// shrinks with the square root of the pairs.
inline constexpr int kNoisyRepetitionsFactor = 2;

/// The decision on the current best judged again on its own (daemon/loop/run_loop_best.cpp).
struct BestRejudgementDecision {
  enum class Outcome {
    Replaced,      ///< another GPU kept a newer best meanwhile: nothing changes (BEST_REPLACED)
    StillPasses,   ///< its time is what it takes now (BEST_PASS)
    FailsAlone,    ///< it fails, with no earlier best to go back to: it stays
    Demoted,       ///< it fails: the best before it is the best again (DEMOTED), its file committed back
  };
  Outcome outcome = Outcome::Replaced;
  /// The row to record. Demoted: the earlier best's row under this experiment's number, whose
  /// numbers a restart recovers the kernel's state from. Its seconds and commit are the recording's.
  ResultRow row;
  /// Demoted: the experiment whose file is the best again; its file is what the recording restores.
  long long back_to = 0;
};
/// `standing` are the kernel's standing bests, oldest first (standing_bests of results.tsv).
BestRejudgementDecision decide_best_rejudgement(const ExperimentJob& job, const Verdict& v, const KernelProgress& k,
                                                const std::vector<ResultRow>& standing);

}  // namespace ak
