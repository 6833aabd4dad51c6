#pragma once
/// The PyTorch times of the KernelBench problems that run as built-in types: a built-in type's
/// evaluation times the type's own CUDA reference, never the problem's module, so its eager and
/// torch.compile times are measured apart, by the same reference process and the same rule as a
/// user type's baseline (harness/user_types/reference_server.py `baseline`: the module at its timed shape,
/// the L2 flushed, CUDA events, the median), and kept beside the config in
/// `<config stem>.baselines.tsv`, which `report` reads.
#include <functional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "daemon/kernelbench/builtin_problem.hpp"

namespace ak {

struct ProblemBaseline {
  std::string tag;                     ///< the built-in entry's tag (daemon/kernelbench/builtin_problem.hpp)
  double eager_us = 0, compile_us = 0;   ///< 0: not measured
  std::string note;                    ///< why a time is missing (torch.compile's failure, the reference's error)
};

/// Measures each problem's module (its user-type spec, resolved against `config_dir`) on GPU
/// `device`: eager and, with `with_compile`, torch.compile. A problem whose spec or reference
/// fails gets its note; an Error only when no GPU can be opened. `after_each` sees the times so
/// far after each problem (torch.compile takes tens of seconds a problem: a caller bounded in time
/// keeps what was measured).
Result<std::vector<ProblemBaseline>> measure_problem_baselines(
    const std::vector<BuiltinProblem>& problems, const std::string& config_dir, int device, int repetitions,
    bool with_compile, const std::function<void(const std::vector<ProblemBaseline>&)>& after_each = {});

/// `<config stem>.baselines.tsv`: a header, then "tag<TAB>eager_us<TAB>compile_us<TAB>note" per problem.
std::string problem_baselines_text(const std::vector<ProblemBaseline>& baselines);

/// Reads what problem_baselines_text wrote; an Error names the file and the line that is not one.
Result<std::vector<ProblemBaseline>> read_problem_baselines(const std::string& path);

}  // namespace ak
