#pragma once
/// What `autokernel kernelbench` writes for an accepted problem: the user type's name, the shapes
/// of its five stages scaled down from the module's own, its spec (the TOML of
/// docs/user-types.md, "The spec") and the config that names the specs.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/kernelbench/builtin_problem.hpp"
#include "kernels_cuda/user_type_writer.hpp"

namespace ak {

/// "kb_" and the file's stem, lower-cased, runs of other characters as one '_', at most 48
/// characters in all: "19_ReLU.py" -> "kb_19_relu".
std::string kernelbench_type_name(const std::string& problem_path);

using DimValues = std::vector<int64_t>;  ///< one value per size global, in the spec's dims order

struct StageShapes {
  DimValues bench, smoke, stability, determinism;
  std::vector<DimValues> sweep, edge;
};

/// The stage shapes of an accepted analysis, as the analyser found them by running the problem at
/// each ("stages"): small shapes, sizes that are multiples of nothing (33, 1531) where the problem
/// allows them, 1 for batch-like sizes in an edge shape, each shape's tensors under 2^22 elements.
/// Without "stages" (a type plan --user-types offers, named by "sizes" and "globals", never run):
/// the same patterns scaled from the sizes, each shape's largest tensor at most `max_elements`
/// (smoke: 1/64 of it).
StageShapes kernelbench_stage_shapes(const nlohmann::json& analysis, int64_t max_elements = int64_t(1) << 22);

/// The user type of an accepted analysis, as its spec file holds it, and the comments the file
/// carries for its reader (what wrote it, the memory a judged launch holds, the globals the
/// analysis found computed or passed beside the tensors).
struct KernelbenchUserType {
  UserTypeSpec spec;
  UserTypeComments comments;
};
KernelbenchUserType kernelbench_user_type(const nlohmann::json& analysis, const std::string& name,
                                          const std::string& reference, const std::string& source_path,
                                          const std::string& starter = "");

/// The spec's TOML for an accepted analysis (kernelbench_user_type(), written by user_type_toml()); `reference` is the copied problem's file name,
/// `starter` a first kernel file's name beside the spec (none when empty).
std::string kernelbench_spec_text(const nlohmann::json& analysis, const std::string& name,
                                  const std::string& reference, const std::string& source_path,
                                  const std::string& starter = "");

/// The spec's tensor names of an accepted analysis, in its order (inputs, parameters, buffers,
/// outputs): torch's names as C identifiers, distinct from each other and from the dims.
std::vector<std::string> kernelbench_argument_names(const nlohmann::json& analysis);

/// The refusals of one `kernelbench` call, beside the config it writes (<config stem>.refused.tsv):
/// a header, then one line per refused file, "file<TAB>reason", tabs and line breaks in either
/// written as spaces. `report` counts them as problems that are not correct.
std::string kernelbench_refusals_text(const std::vector<std::pair<std::string, std::string>>& refusals);

/// The config: [run], [llm] left to the user, one [[kernel]] per built-in problem, then one per spec
/// path (relative to the config); `every_spec_has_a_starter` says so in [llm]'s comment.
std::string kernelbench_config_text(const std::string& run_name, const std::vector<std::string>& spec_paths,
                                    const std::vector<BuiltinProblem>& builtins = {},
                                    bool every_spec_has_a_starter = false);

}  // namespace ak
