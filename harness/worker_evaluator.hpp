#pragma once
/// The real Evaluator: candidates run in a worker process of the same binary, under a watchdog
/// that gives every stage its own time limit. A crash, a hang or a lost CUDA context costs one
/// verdict (CRASH / TIMEOUT) and a fresh worker, never the calling process.
#include <sys/types.h>

#include <atomic>
#include <string>
#include <vector>

#include "harness/evaluator.hpp"

namespace ak {

class WorkerEvaluator : public Evaluator {
 public:
  struct Options {
    std::vector<std::string> command;   ///< argv of the worker; empty: this binary's `worker`
    int device = 0;
    double stage_timeout_s = 60;        ///< per stage, compile and benchmark included
    double startup_timeout_s = 120;     ///< the first start measures the GPU's peaks
    const std::atomic<bool>* cancel = nullptr;  ///< set when the caller must stop now
  };
  explicit WorkerEvaluator(Options o);
  ~WorkerEvaluator() override;

  Result<Verdict> evaluate(const EvalRequest& req) override;
  /// Workers started so far (1 after the first request; more after crashes).
  int starts() const { return starts_; }
  pid_t pid() const { return pid_; }

 private:
  Status start();
  void stop(bool kill_now);
  /// Reads one line within `deadline_s`; sets timed_out or eof instead when those happen.
  std::optional<std::string> read_line(double deadline_s, bool& timed_out, bool& eof);
  /// "killed by signal 11 (Segmentation fault)" or "exited with code 3".
  std::string reap();

  Options opt_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  std::string pending_;
  int starts_ = 0;
};

}  // namespace ak
