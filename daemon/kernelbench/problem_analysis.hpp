#pragma once
/// Running the embedded analyser (daemon/kernelbench/analyse_problem.py) on a KernelBench problem
/// file with a Python that needs no PyTorch, and reading its JSON verdict.
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace ak {

/// The analyser's text, embedded at build time.
const std::string& problem_analyser_source();

/// Whether `python` (a path, or a name looked up on PATH) names an executable file.
bool python_available(const std::string& python);

/// The analyser's JSON for `problem_path` (accepted or refused: both are data). An Error when the
/// interpreter cannot run or its output is not the JSON it should print.
Result<nlohmann::json> analyse_problem(const std::string& python, const std::string& problem_path);

}  // namespace ak
