#pragma once
/// The loop: pick a kernel (Amdahl), get one edit (Proposer), judge it (Evaluator), keep or
/// revert, commit kept variants (git), record every experiment (results.tsv), until every kernel
/// has converged, a budget is spent, or the daemon is asked to stop. A restart resumes from the
/// run folder: the results table is the truth, the git history fills in a row lost in a crash,
/// the in-flight ledger names the experiments to run again.
///
/// With several GPUs every free one gets an experiment (a thread each, waiting on its worker
/// process); the decisions stay on the loop's thread, one finished experiment at a time, in
/// order of completion.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "daemon/loop/clock.hpp"
#include "daemon/loop/decision_times.hpp"
#include "daemon/loop/experiment_job.hpp"
#include "daemon/loop/gpu_time.hpp"
#include "daemon/loop/gpu_workers.hpp"
#include "daemon/loop/service_notify.hpp"
#include "daemon/loop/stale_verdicts.hpp"
#include "daemon/loop/verdict_decision.hpp"
#include "daemon/proposers/model_notes.hpp"
#include "daemon/proposers/proposal_context.hpp"
#include "daemon/proposers/proposer.hpp"
#include "daemon/run_folder/commit_trailers.hpp"
#include "daemon/run_folder/git_history.hpp"
#include "daemon/run_folder/in_flight_ledger.hpp"
#include "daemon/run_folder/kernel_progress.hpp"
#include "daemon/run_folder/run_directory.hpp"
#include "harness/evaluation/evaluator.hpp"

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
  RunLoop(Config cfg, std::vector<GpuWorker> gpus, Proposer& proposer, Clock& clock, LoopSignals signals = {},
          ServiceNotifier* notifier = nullptr);
  /// One GPU: [gpu] device.
  RunLoop(Config cfg, Evaluator& evaluator, Proposer& proposer, Clock& clock, LoopSignals signals = {},
          ServiceNotifier* notifier = nullptr);
  ~RunLoop();   ///< waits for the experiments still in flight

  Result<RunOutcome> run();

  /// Called after SIGHUP with the re-read config (the LLM client takes its new settings).
  std::function<void(const Config&)> on_reload;

  /// Tests only: called at "dispatched", "evaluated", "committed" and "recorded", on the loop's
  /// thread; throwing from it leaves the run folder as a kill at that point would.
  std::function<void(const std::string&)> crash_point;

  const std::vector<KernelProgress>& kernels() const { return kernels_; }
  const RunDirectory& directory() const { return dir_; }

 private:
  Status open();
  Status recover_from_git();
  Status restore_kernel_files();
  Status read_in_flight();
  /// Starts experiments on the free GPUs while a kernel has work; an Error ends the run.
  Status dispatch_free_gpus();
  /// Starts one experiment of kernel k on GPU w; false when it started none (nothing to propose,
  /// or an LLM already answering as many questions as it may).
  Result<bool> dispatch(size_t k, size_t w);
  Status start(ExperimentJob job, const std::string& description);
  ExperimentJob new_job(size_t k, size_t w, long long n, bool baseline);
  /// What comes of a finished experiment: an unused number, a failed proposal, an error, the harness
  /// failing, the best judged again, or a candidate's verdict (finish_candidate).
  Status finish(FinishedJob f);
  /// The keep or revert of a judged candidate (decide_candidate), its commit, its row and the state.
  Status finish_candidate(ExperimentJob job, const Verdict& v);
  /// The verdict's file beside the candidate, and its counters' row in counters.tsv.
  void keep_verdict(long long n, const std::string& tag, const Verdict& v);
  /// Writes `source` as the kernel's file and commits it with `row`'s metrics; the commit's id.
  Result<std::string> commit_best(const std::string& tag, const std::string& source, const ResultRow& row,
                                  double previous_best_us, const std::string& unit);
  void log_candidate(const ExperimentJob& job, const Verdict& v, const CandidateDecision& d) const;
  /// finish(), with whatever it throws recorded as the experiment's ERROR row.
  Status finish_guarded(FinishedJob f);
  Status record_error(const ExperimentJob& job, const std::string& why);
  /// Starts `job` again beside the kernel's current best (its file and version read anew).
  Status start_beside_best(ExperimentJob job);
  Status judge_again(ExperimentJob job);
  /// A candidate whose pairing was too noisy to decide (CandidateDecision::judge_again_noisy):
  /// judged again beside the best with more launches.
  Status judge_again_noisy(ExperimentJob job, const Verdict& v);
  /// A verdict that says the harness failed, not the candidate: the candidate is judged again, up
  /// to kHarnessRetries times, then recorded as HARNESS_ERROR (neither a revert nor a first try).
  Status harness_failed(ExperimentJob job, const Verdict& v);
  /// The current best judged again, alone, when a pairing found it out of line with the time it
  /// was kept at (daemon/loop/run_loop_best.cpp): started on a free GPU, then kept or demoted.
  Status dispatch_best_rejudgements();
  Status finish_best_rejudgement(const ExperimentJob& job, const Verdict& v);
  Status proposal_arrived(const ExperimentJob& job);
  Status record_no_proposal(const ExperimentJob& job, const std::string& why);
  ProposalContext context(size_t k) const;
  /// Keeps what the model wrote for the kernel's next prompts (its scratchpad, a structure to see).
  void keep_model_notes(size_t k, const Proposal& p);
  Status record(const ResultRow& row);
  size_t busy_gpus() const { return running_.size(); }
  bool stop_requested() const { return signals_.stop && signals_.stop->load(); }
  std::string gpu_model_filter(size_t w) const;
  std::string doing_line(const ExperimentJob& job, const std::string& what) const;   ///< for `status`
  GpuState judging_state(const ExperimentJob& job) const;   ///< what a GPU starting `job` spends its time on
  void idle_free_gpus(GpuState why);   ///< every GPU without an experiment is idle for `why` from now
  /// Pushes the run's branch to [run] git_remote, when set; a failure is logged, not fatal.
  void push_history();
  std::string verdict_file(long long n, const std::string& tag) const;   ///< experiments/NNNN-<tag>.verdict.json
  /// With `in_flight`, the experiments started count too (whether to start another).
  std::optional<std::string> budget_spent(bool in_flight = false) const;
  double wall_seconds() const;
  void reload_if_asked();
  void write_state(const std::string& status) const;
  std::string summary() const;
  void at(const std::string& point) {
    if (crash_point) crash_point(point);
  }

  Config cfg_;
  std::vector<GpuWorker> gpus_;
  Proposer& proposer_;
  Clock& clock_;
  LoopSignals signals_;
  ServiceNotifier* notifier_;
  RunDirectory dir_;
  std::unique_ptr<GitHistory> git_;
  std::vector<ResultRow> rows_;
  std::vector<KernelProgress> kernels_;
  long long next_experiment_ = 1;
  std::unique_ptr<InFlightLedger> ledger_;
  std::vector<InFlight> to_rerun_;      ///< candidates in flight when the daemon last stopped
  std::map<long long, ExperimentJob> running_;   ///< by experiment number
  std::map<size_t, std::string> doing_;          ///< by GPU: the line `status` shows
  std::vector<std::thread> threads_;             ///< by GPU
  FinishedQueue finished_;
  int proposing_ = 0;                   ///< slow proposals being asked now
  double wall_before_ = 0, session_start_ = 0;   ///< for [run] max_hours across restarts
  double cost_usd_ = 0;                 ///< LLM spend; kept in state.json across restarts
  DecisionTimes decisions_;             ///< the loop thread's time per verdict, this process
  GpuTime gpu_time_{0, 0};             ///< where each GPU's time went, this process
  StaleVerdicts stale_;                 ///< verdicts on candidates whose best was replaced meanwhile
  long long noisy_judged_again_ = 0;    ///< pairings too noisy to decide, judged again with more launches
  std::map<std::string, ModelNotes> notes_;   ///< by kernel tag: the model's notes (notes/<tag>.json)
};

}  // namespace ak
