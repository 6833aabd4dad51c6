#pragma once
/// The loop: pick a kernel (Amdahl), get one edit (Proposer), judge it (Evaluator), keep or
/// revert, commit kept variants (git), record every experiment (results.tsv), until every kernel
/// has converged, a budget is spent, or the daemon is asked to stop. A restart resumes from the
/// run folder: the results table is the truth, the git history fills in a row lost in a crash.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "daemon/loop/clock.hpp"
#include "daemon/loop/git_history.hpp"
#include "daemon/loop/kernel_progress.hpp"
#include "daemon/loop/proposer.hpp"
#include "daemon/loop/run_directory.hpp"
#include "daemon/loop/service_notify.hpp"
#include "harness/evaluator.hpp"

namespace ak {

struct RunOutcome {
  enum Kind { Converged, BudgetSpent, Stopped } kind = Converged;
  std::string why;
  std::string summary;   ///< the per-kernel table and the Amdahl estimate
};

struct LoopSignals {
  const std::atomic<bool>* stop = nullptr;     ///< SIGTERM / SIGINT: finish up and exit 0
  std::atomic<bool>* reload = nullptr;         ///< SIGHUP: re-read budgets, convergence, [llm]
};

class RunLoop {
 public:
  RunLoop(Config cfg, Evaluator& evaluator, Proposer& proposer, Clock& clock, LoopSignals signals = {},
          ServiceNotifier* notifier = nullptr);

  Result<RunOutcome> run();

  /// Called after SIGHUP with the re-read config (the LLM client takes its new settings).
  std::function<void(const Config&)> on_reload;

  /// Tests only: called at "evaluated", "committed" and "recorded"; throwing from it leaves the
  /// run folder as a kill at that point would.
  std::function<void(const std::string&)> crash_point;

  const std::vector<KernelProgress>& kernels() const { return kernels_; }
  const RunDirectory& directory() const { return dir_; }

 private:
  Status open();
  Status recover_from_git();
  Status restore_kernel_files();
  /// One experiment on kernel k; false when the proposer had nothing to offer.
  Result<bool> experiment(size_t k);
  ProposalContext context(const KernelProgress& k) const;
  Status record(const ResultRow& row);
  /// Pushes the run's branch to [run] git_remote, when set; a failure is logged, not fatal.
  void push_history();
  std::string verdict_file(long long n, const std::string& tag) const;   ///< experiments/NNNN-<tag>.verdict.json
  std::optional<std::string> budget_spent() const;
  void reload_if_asked();
  void write_state(const std::string& status) const;
  std::string summary() const;
  void at(const std::string& point) {
    if (crash_point) crash_point(point);
  }

  Config cfg_;
  Evaluator& evaluator_;
  Proposer& proposer_;
  Clock& clock_;
  LoopSignals signals_;
  ServiceNotifier* notifier_;
  RunDirectory dir_;
  std::unique_ptr<GitHistory> git_;
  std::vector<ResultRow> rows_;
  std::vector<KernelProgress> kernels_;
  long long next_experiment_ = 1;
  double cost_usd_ = 0;                 ///< LLM spend; kept in state.json across restarts
  std::string gpu_, arch_, unit_;       ///< what the last verdict said of the device
  double peak_ = 0;
};

/// The keep rule for a candidate that passed: when the harness timed it beside the best, the
/// paired ratio must clear the threshold by more than its noise; an evaluator that times alone
/// (a scripted one) is judged on its median against the recorded best.
bool faster_than_best(const Verdict& v, double best_us, double keep_threshold);

/// The commit message of a kept experiment, metrics as trailers.
std::string commit_message(const ResultRow& row, double previous_best_us, const std::string& unit);
/// The row a kept experiment's commit describes (to replace one lost in a crash).
Result<ResultRow> row_from_commit(const CommitInfo& c);

}  // namespace ak
