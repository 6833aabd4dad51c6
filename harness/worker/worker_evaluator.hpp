#pragma once
/// The real Evaluator: candidates run in a worker process of the same binary, under a watchdog
/// that gives every stage its own time limit. A crash, a hang or a lost CUDA context costs one
/// verdict (CRASH / TIMEOUT) and a fresh worker, never the calling process. What the worker
/// writes outside the protocol (its stderr, where device printf and its compile server's words
/// land) reaches the log only through an OutputRelay: cleaned, capped, prefixed "worker N: ".
#include <sys/types.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "harness/compile/compile_limits.hpp"
#include "harness/evaluation/evaluator.hpp"
#include "harness/process/child_process.hpp"

namespace ak {

class WorkerEvaluator : public Evaluator {
 public:
  struct Options {
    /// argv of the worker; empty: this binary's `worker`, told the stage limit so that its
    /// compiles end within it (compile_limits_within)
    std::vector<std::string> command;
    int device = 0;
    double stage_timeout_s = kDefaultStageTimeoutS;   ///< per stage, compile and benchmark included
    /// The limit of a user type's "baseline" stage, when longer than stage_timeout_s: PyTorch's own
    /// module compiled by torch.compile (autotuning for minutes on a large shape), in the reference
    /// process. No candidate code runs in that stage, so the longer limit gives a hang nothing.
    double baseline_timeout_s = 900;
    double startup_timeout_s = 120;     ///< the first start measures the GPU's peaks
    const std::atomic<bool>* cancel = nullptr;  ///< set when the caller must stop now
    /// The worker's whole environment ("NAME=value"); the default is minimal_environment().
    std::optional<std::vector<std::string>> environment;
    /// Where the worker's cleaned output lines go; empty: the log, as warnings.
    OutputRelay::Sink output;
  };
  explicit WorkerEvaluator(Options o);
  ~WorkerEvaluator() override;

  Result<Verdict> evaluate(const EvalRequest& req) override;
  /// Workers started so far (1 after the first request; more after crashes).
  int starts() const { return starts_; }
  pid_t pid() const { return child_.pid(); }

 private:
  Status start();
  void stop(bool kill_now);

  Options opt_;
  ChildProcess child_;
  int starts_ = 0;
};

}  // namespace ak
