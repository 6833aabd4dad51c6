#pragma once
/// The launch plan of a user type's kernel file (docs/user-types.md, "Launch plans"): the
/// `extern "C" __constant__ char ak_launch[]` text that declares the op's integers (let), its
/// scratch buffers and its steps (kernels run in order, each with its grid, block and dynamic
/// shared memory), every size an integer expression over the spec's dims and integer [fixed]
/// globals. Pure text and arithmetic: the harness reads the text from the compiled module, and
/// checks the plan at every shape the spec declares before any step runs.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels_cuda/spec.hpp"
#include "kernels_cuda/spec_expression.hpp"

namespace ak {

struct UserTypeSpec;

/// The symbol a planned file defines.
inline constexpr const char* kLaunchPlanSymbol = "ak_launch";

/// What a scratch buffer holds: float, T (the dtype under test), int or int64 (long long).
enum class ScratchElem { Float, T, Int, Int64 };
const char* scratch_elem_name(ScratchElem e);      ///< "float", "T", "int", "int64"
const char* scratch_elem_cuda_type(ScratchElem e); ///< "float", "T", "int", "long long"
size_t scratch_elem_bytes(ScratchElem e, DType d);

/// One statement of a plan, in the order written. `text` is the statement as written (spaces
/// collapsed), for every message about it.
struct PlanStatement {
  enum Kind { Let, Scratch, Step } kind = Let;
  std::string text;
  std::string name;
  /// let: {value}; scratch: {element count}; step: grid's 1-3 then block's 1-3 then smem's 0-1.
  std::vector<SpecExpression> exprs;
  size_t grid_dims = 0, block_dims = 0;   ///< step: how many of exprs are the grid's, the block's
  bool has_smem = false;
  ScratchElem elem = ScratchElem::Float;  ///< scratch
};

struct LaunchPlan {
  std::string text;                      ///< as read
  std::vector<PlanStatement> statements; ///< in order
  std::vector<std::string> step_names() const;
  std::vector<const PlanStatement*> scratch() const;   ///< in declaration order
};

/// The bounds of a plan. The grid and block bounds are CUDA's; smem is the device's opt-in
/// maximum; scratch is the config's cap ([harness] scratch_cap_mib).
struct LaunchLimits {
  int64_t max_grid_x = 2147483647, max_grid_y = 65535, max_grid_z = 65535;
  int64_t max_block_x = 1024, max_block_y = 1024, max_block_z = 64, max_block_threads = 1024;
  int64_t max_dynamic_smem = 227 * 1024;
  uint64_t scratch_cap_bytes = uint64_t(16384) << 20;
};

inline constexpr size_t kMaxPlanBytes = 8192;
inline constexpr size_t kMaxPlanLets = 32, kMaxPlanScratch = 16, kMaxPlanSteps = 16;

/// Parses a plan's text: its grammar, its counts, its names (identifiers, not C++ words, each
/// defined once). Names read by expressions are checked against a spec by check_launch_plan.
Result<LaunchPlan> parse_launch_plan(const std::string& text);

/// One step at one shape.
struct StepLaunch {
  std::string name;
  std::array<int64_t, 3> grid{1, 1, 1};
  std::array<int64_t, 3> block{1, 1, 1};
  int64_t smem = 0;
};

/// A plan evaluated at one shape and dtype: every scratch buffer's bytes, every step's geometry.
struct PlanAtShape {
  std::vector<uint64_t> scratch_bytes;   ///< in declaration order
  std::vector<StepLaunch> steps;
};

/// The integers a plan and a spec's shapes may read at `shape`: the dims and the integer [fixed] globals.
std::map<std::string, int64_t> plan_values(const UserTypeSpec& spec, const Shape& shape);

/// Evaluates the plan with `values` (plan_values at some shape) for dtype d, checking every
/// statement against `limits`; an error names the statement and what is wrong.
Result<PlanAtShape> evaluate_launch_plan(const LaunchPlan& plan, const std::map<std::string, int64_t>& values, DType d,
                                           const LaunchLimits& limits);

/// Checks a plan against a spec: every name it reads defined before use (a dim, an integer
/// [fixed] global or an earlier let), no name of its own that is a dim, a global or a tensor,
/// and evaluate_launch_plan at every shape the spec declares (smoke, sweep, stability,
/// determinism, edge, bench) in every dtype, the refusal naming the statement and the shape.
Status check_launch_plan(const LaunchPlan& plan, const UserTypeSpec& spec, const LaunchLimits& limits);

/// The `ak_launch` text of a kernel file's source: its string literals concatenated as the
/// compiler concatenates adjacent ones (comments between them skipped); nullopt when the source
/// declares none. An error when the declaration is not string literals alone, or appears twice.
Result<std::optional<std::string>> launch_plan_source_text(const std::string& source);

/// The step names of the source's plan, in order (empty: no plan), for the compile's name
/// expressions; an error when the plan in the source cannot be read or parsed.
Result<std::vector<std::string>> launch_step_names(const std::string& source);

}  // namespace ak
