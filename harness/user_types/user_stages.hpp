#pragma once
/// The five correctness stages for a user type: the same names, order and verdict fields as
/// run_builtin_stages (harness/judging/stages.hpp), judged by the type's reference process instead of a
/// reference kernel. Each run: the process draws the inputs with the module's get_inputs() under
/// a fresh seed into the pool and poisons the outputs -> the candidate runs on the pool -> the
/// process compares in its own memory (and checks that no input changed). The worker checks the
/// module's memory as for every candidate, and the determinism stage compares the repeated
/// launches' outputs bitwise on the host.
#include <optional>
#include <string>
#include <vector>

#include "harness/judging/stages.hpp"
#include "harness/judging/verdict.hpp"
#include "harness/module/device_checks.hpp"
#include "harness/module/kernel_launch.hpp"
#include "harness/user_types/user_reference.hpp"

namespace ak {

/// One run of the candidate on a user type: a shape, a dtype, the factor the float inputs are
/// multiplied by after get_inputs() drew them, and the edge recipe that changes them (empty: none).
struct UserRunCase {
  Shape shape;
  DType dtype = DType::F32;
  double scale = 1;
  std::string inputs;
};

/// The edge recipes of the reference process (harness/user_types/reference_server.py, EDGE_INPUTS): the float
/// inputs of get_inputs() with random signs, with zeros, at magnitudes 2^k apart, with the dtype's
/// tiny values (+-0, subnormals, the smallest normal) and its huge ones (max/16, infinities); each
/// where the reference stays finite, within a range the spec declares.
inline constexpr const char* kEdgeRecipes[] = {"signed", "zeros", "magnitudes", "tiny", "huge"};

struct UserStage {
  std::string name;                ///< as run_builtin_stages names it
  std::vector<UserRunCase> cases;
  int repeats = 1;                 ///< launches on the same inputs, bitwise equal each time
  std::string detail;              ///< what passing it covers
};

/// The stages of a user type, in run_builtin_stages' order: smoke (the smoke shape, the first
/// dtype), shape sweep (every sweep shape in every dtype), numerical stability (the stability
/// shape in every dtype, inputs scaled by kStabilityScales), determinism (3 launches at the
/// determinism shape in every dtype) and edge cases (every edge shape in every dtype, then each of
/// kEdgeRecipes at the stability shape in every dtype).
std::vector<UserStage> user_stage_plan(const KernelSpec& spec);
inline constexpr double kStabilityScales[] = {64.0, 1.0 / 64};

class UserCaseRunner {
 public:
  UserCaseRunner(GpuContext& gpu, const DeviceChecks& checks, const KernelSpec& spec, const LaunchableKernel& candidate,
                 UserReference& reference)
      : gpu_(gpu), checks_(checks), spec_(spec), cand_(candidate), ref_(reference) {}

  /// Runs the candidate `repeats` times on one drawing of inputs. A failure of the reference
  /// process itself is a StageFailure too, marked the harness's (StageFailure::harness).
  std::optional<StageFailure> run(const UserRunCase& c, int repeats = 1);
  size_t peak_bytes() const { return peak_bytes_; }
  /// Every check so far was within KernelBench's tolerance too.
  bool kernelbench_pass() const { return kernelbench_pass_; }

 private:
  std::optional<StageFailure> launch_once(const UserRunCase& c, const PreparedRun& run, const RunCase& at);
  GpuContext& gpu_;
  const DeviceChecks& checks_;
  const KernelSpec& spec_;
  const LaunchableKernel& cand_;
  UserReference& ref_;
  size_t peak_bytes_ = 0;
  bool kernelbench_pass_ = true;
  DeviceBuffer memory_slot_;
};

/// Runs the stages of user_stage_plan in order into v.stages, stopping at the first failure, which
/// fills the verdict's failure fields (v.harness_error when the reference process failed). True
/// when all five passed; v.kernelbench_pass is set either way.
bool run_user_stages(UserCaseRunner& runner, const KernelSpec& spec, Verdict& v, const StageListener& on_stage);

/// "x64" or "x0.015625": how a case's inputs were scaled, for the verdict's failed_input.
std::string scale_name(double scale);

/// A case's inputs as the verdict's failed_input says them: "get_inputs()", "get_inputs() x64",
/// "get_inputs() edge: signed".
std::string inputs_name(const UserRunCase& c);

}  // namespace ak
