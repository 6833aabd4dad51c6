#pragma once
/// A KernelBench problem that computes one of the built-in types (the analyser's `builtin` match,
/// daemon/kernelbench/builtin_match.py): the [[kernel]] entry `kernelbench` writes for it, so the
/// builtin tuner starts from the type's starter and variants, and the link from that entry back
/// to the problem, `<config stem>.builtin.tsv` beside the config, which `report` reads to score
/// the entry as the problem.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace ak {

struct BuiltinProblem {
  std::string tag;            ///< the entry's tag in the run (the type, or type-N where several entries share it)
  std::string type;           ///< the built-in type
  std::vector<long long> shape;   ///< the type's shape at the problem's own sizes ([rows, cols])
  std::string dtype = "fp32";
  std::string problem;        ///< the problem file as given to `kernelbench`
  std::string spec;           ///< its user-type spec (for its eager and torch.compile times), relative to the config
  std::string mapping;        ///< which tensor of the problem is which argument of the type: "x=x; y=out"
};

/// The entry for an accepted analysis whose `builtin` match names a registered type that takes
/// `dtype` at the matched shape, or an Error that says why not (the caller keeps the problem a
/// user type then).
Result<BuiltinProblem> builtin_problem_of(const nlohmann::json& analysis, const std::string& problem,
                                          const std::string& spec, const std::string& dtype = "fp32");

/// Tags as the run gives them (daemon/run_folder/kernel_progress.cpp: the type, type-1, type-2... where
/// several entries of the config share a type), in the order the entries are written.
void assign_builtin_tags(std::vector<BuiltinProblem>& problems);

/// The [[kernel]] entry of one problem, with a comment that names the problem and the mapping.
std::string builtin_entry_text(const BuiltinProblem& p, const std::string& weight);

/// `<config stem>.builtin.tsv`: a header, then one line per problem (tag, type, shape as RxC,
/// dtype, problem, spec, mapping), tabs and line breaks in a cell written as spaces.
std::string builtin_problems_text(const std::vector<BuiltinProblem>& problems);

/// Reads what builtin_problems_text wrote; an Error names the file and the line that is not one.
Result<std::vector<BuiltinProblem>> read_builtin_problems(const std::string& path);

}  // namespace ak
