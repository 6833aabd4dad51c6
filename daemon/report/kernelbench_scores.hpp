#pragma once
/// A run's kernels of user types scored as KernelBench scores its problems: per problem whether
/// it is correct and how fast against PyTorch eager and torch.compile, and fast_p (the share of
/// problems that are correct and more than p times faster; at p = 0 correctness alone), under our
/// tolerance and under KernelBench's own (its checker's for the dtype, fp32 1e-4: the verdict's
/// kernelbench_pass). Problems `kernelbench` refused count in the denominator as not correct.
#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "daemon/kernelbench/builtin_problem.hpp"
#include "daemon/kernelbench/problem_baselines.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "harness/judging/verdict.hpp"

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
  /// For a problem run as a built-in type: the problem file (its tag is the built-in entry's).
  /// Its KernelBench correctness is derived: the type's tolerance at the dtype is no looser than
  /// KernelBench's and the import found the type's reference computing the problem's outputs.
  std::string builtin_problem;
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

/// A problem `kernelbench` refused: its file and why (a line of <config stem>.refused.tsv).
struct RefusedProblem {
  std::string file, reason;
};

/// The refusals `kernelbench` wrote beside its config; an Error names the file and the line that
/// is not "file<TAB>reason" (a missing file is an Error too: the caller decides whether it matters).
Result<std::vector<RefusedProblem>> read_kernelbench_refusals(const std::string& path);

/// Where `kernelbench` wrote the refusals of the config that made the run in `run_dir`: the config
/// it writes names its run after its own stem under `workdir = "runs"`, so <run_dir>/../../<run
/// folder's name>.refused.tsv.
std::string default_refusals_path(const std::string& run_dir);

struct KernelBenchScores {
  std::vector<ProblemScore> problems;   ///< in the order the run first met them
  std::vector<RefusedProblem> refused;  ///< counted in every denominator, never correct
  std::vector<FastP> fast_p;            ///< p = 0 (correct alone), 1, 1.5, 2
  int without_eager = 0, without_compile = 0;   ///< problems with no time of that baseline
  int builtin = 0;                              ///< problems run as built-in types
  /// Every problem given to `kernelbench`: those of the run and those it refused.
  size_t total() const { return problems.size() + refused.size(); }
  std::vector<std::string> unreadable;          ///< from RunVerdicts
};

/// Whether passing `builtin_type`'s own check at `dtype` implies passing KernelBench's checker
/// (the type's atol and rtol no looser than KernelBench's for the dtype: fp32 1e-4, fp16 and bf16 1e-2).
bool builtin_tolerance_within_kernelbench(const std::string& builtin_type, const std::string& dtype);

/// Where `kernelbench` wrote the built-in problems and their PyTorch times of the config that made
/// the run in `run_dir` (as default_refusals_path): <run_dir>/../../<name>.builtin.tsv and .baselines.tsv.
std::string default_builtin_problems_path(const std::string& run_dir);
std::string default_problem_baselines_path(const std::string& run_dir);

/// Scores every user-type tag of `rows` with `verdicts`, every built-in problem's tag with its
/// PyTorch times from `baselines` (by tag), and `refused` as problems not solved; no problems when
/// the run has none of these.
KernelBenchScores kernelbench_scores(const std::vector<ResultRow>& rows, const RunVerdicts& verdicts,
                                     const std::vector<RefusedProblem>& refused = {},
                                     const std::vector<BuiltinProblem>& builtin = {},
                                     const std::vector<ProblemBaseline>& baselines = {});

}  // namespace ak
