#pragma once
/// One experiment in flight on one GPU: what the loop hands a worker thread (a proposal, or the
/// context to ask for one, and the request to judge), and what comes back. The thread proposes
/// (when the proposer is slow), writes the candidate beside the others and waits for the verdict;
/// every decision on what came back is the loop's, on its own thread, in order of completion.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "daemon/loop/clock.hpp"
#include "daemon/proposers/proposer.hpp"
#include "harness/evaluation/evaluator.hpp"

namespace ak {

struct ExperimentJob {
  long long experiment = 0;
  size_t kernel = 0;               ///< index into the loop's kernels
  size_t worker = 0;               ///< index into the loop's GPUs
  bool baseline = false;           ///< the kernel's starter, experiment 0 of the kernel
  bool propose_on_thread = false;  ///< ask `context` of the proposer first (an LLM)
  int times_judged = 0;            ///< > 0: judged again beside a newer best
  int harness_retries = 0;         ///< > 0: judged again after the harness itself failed on it
  int noisy_rejudges = 0;          ///< > 0: judged again with more launches, its pairing too noisy to decide
  bool rejudge_best = false;       ///< the kernel's current best, judged again alone
  /// Judged at least once already (beside an older best, by a failed harness, too noisily).
  bool judged_before() const { return times_judged > 0 || harness_retries > 0 || noisy_rejudges > 0; }
  ProposalContext context;
  Proposal proposal;               ///< known at dispatch unless propose_on_thread
  std::string candidate_path;      ///< where the candidate is written
  EvalRequest request;             ///< source filled in once the proposal is known
  int best_version = 0;            ///< the kernel's best when the request was made
  double started_s = 0;
};

struct FinishedJob {
  ExperimentJob job;
  std::optional<Verdict> verdict;
  std::optional<std::string> eval_failure;   ///< the evaluator gave no verdict (no worker, cancelled)
  std::optional<std::string> no_proposal;    ///< the proposer failed (an unusable LLM answer)
  bool nothing_to_propose = false;           ///< the proposer had nothing new
  /// Something threw after the proposal arrived (writing the candidate, judging it): recorded as
  /// an ERROR row, and the run goes on.
  std::optional<std::string> thrown;
  /// Not finished: the proposal asked on the thread has arrived and is being judged (the loop
  /// may ask the next question).
  bool proposed_only = false;
  double finished_s = 0;   ///< when the job's thread was done with it (the loop's clock)
};

/// Where worker threads leave finished jobs for the loop.
class FinishedQueue {
 public:
  void push(FinishedJob f);
  FinishedJob pop();   ///< waits for one
 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<FinishedJob> q_;
};

/// The work of one job on its thread: propose if asked to (then say so through `queue`), write
/// the candidate, evaluate, and leave the result in `queue`. Never throws: an exception from the
/// proposer is a failed proposal, one from anything after it is `thrown`.
void run_job(ExperimentJob job, Proposer& proposer, Evaluator& evaluator, FinishedQueue& queue, Clock& clock);

}  // namespace ak
