#pragma once
/// Running the embedded analyser (daemon/kernelbench/analyse_problem.py) on KernelBench problem
/// files with a Python that has PyTorch, and reading its JSON verdicts: it runs each problem (on
/// PyTorch's meta device) to find its sizes, tensors, kind and stage shapes.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace ak {

/// The analyser's text, embedded at build time.
const std::string& problem_analyser_source();

/// Whether `python` (a path, or a name looked up on PATH) names an executable file.
bool python_available(const std::string& python);

/// The analyser's JSON for each of `problem_paths`, in order, from one Python process (PyTorch is
/// imported once). Each entry is the verdict (accepted or refused: both are data), or an Error
/// where the analyser gave none for that file (it died, or ran past its time on it). An Error as
/// a whole when the interpreter cannot run at all or has no PyTorch.
Result<std::vector<Result<nlohmann::json>>> analyse_problems(const std::string& python,
                                                             const std::vector<std::string>& problem_paths);

/// The same, the files dealt round-robin to up to `processes` Python processes run side by side
/// (each analyses on one CPU thread): a level of a hundred problems in a fraction of the time.
Result<std::vector<Result<nlohmann::json>>> analyse_problems_in_parallel(const std::string& python,
                                                                         const std::vector<std::string>& problem_paths,
                                                                         unsigned processes);

/// One file's verdict, as analyse_problems gives it.
Result<nlohmann::json> analyse_problem(const std::string& python, const std::string& problem_path);

}  // namespace ak
