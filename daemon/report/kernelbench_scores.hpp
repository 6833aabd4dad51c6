#pragma once
/// A run's kernels of user types scored as KernelBench scores its problems: per problem whether
/// it is correct and how fast against PyTorch eager and torch.compile, and fast_p (the share of
/// problems that are correct and more than p times faster), under our tolerance and under
/// KernelBench's own (atol = rtol = 1e-2, the verdict's kernelbench_pass).
#include <map>
#include <string>
#include <vector>

#include "daemon/loop/results_table.hpp"
#include "harness/verdict.hpp"

namespace ak {

/// A row's kernel type is a user type: it is none of the built-in types (a user type may not
/// take a built-in type's name, register_user_type refuses it).
bool is_user_type(const std::string& kernel_type);

/// The verdicts of a run's judged rows of user types, by experiment number.
struct RunVerdicts {
  std::map<long long, Verdict> by_experiment;
  /// Verdict files of judged rows that are missing or are no verdict, each "path (why)".
  std::vector<std::string> unreadable;
};

/// Reads experiments/NNNN-<tag>.verdict.json of every row of a user type that the harness judged
/// (rows the daemon wrote alone, NO_PROPOSAL, ERROR and the best judged again, have none).
RunVerdicts read_user_type_verdicts(const std::string& run_dir, const std::vector<ResultRow>& rows);

/// One problem (a kernel tag of a user type). Times are µs; 0 where not measured.
struct ProblemScore {
  std::string tag, kernel_type;
  bool correct = false;               ///< a passing best stands (our tolerance)
  bool kernelbench_correct = false;   ///< the best within KernelBench's tolerance; with no best, any verdict
  double best_us = 0;                 ///< our best now (a best timed again counts at its new time)
  /// The time scored under KernelBench's tolerance: best_us, or with no passing best the
  /// fastest timed verdict within KernelBench's tolerance.
  double kernelbench_us = 0;
  double eager_us = 0, compile_us = 0;   ///< from the baseline's verdict (else the first that has one)
  double speedup_eager() const { return ratio(eager_us, best_us); }
  double speedup_compile() const { return ratio(compile_us, best_us); }
  double kernelbench_speedup_eager() const { return ratio(eager_us, kernelbench_us); }
  double kernelbench_speedup_compile() const { return ratio(compile_us, kernelbench_us); }

 private:
  static double ratio(double baseline, double us) { return baseline > 0 && us > 0 ? baseline / us : 0; }
};

/// fast_p at one p: how many problems are correct and more than p times faster.
struct FastP {
  double p = 1;
  int eager = 0, compile = 0;                          ///< under our tolerance
  int kernelbench_eager = 0, kernelbench_compile = 0;  ///< under KernelBench's
};

struct KernelBenchScores {
  std::vector<ProblemScore> problems;   ///< in the order the run first met them
  std::vector<FastP> fast_p;            ///< p = 1, 1.5, 2
  int without_eager = 0, without_compile = 0;   ///< problems with no time of that baseline
  std::vector<std::string> unreadable;          ///< from RunVerdicts
};

/// Scores every user-type tag of `rows` with `verdicts`; no problems when the run has no user type.
KernelBenchScores kernelbench_scores(const std::vector<ResultRow>& rows, const RunVerdicts& verdicts);

}  // namespace ak
