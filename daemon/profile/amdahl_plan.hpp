#pragma once
/// From a profile to a plan: for each kernel worth optimizing, its share f of the GPU time, the
/// speedup s it could reach, and what that gives the whole program, 1 / ((1 - f) + f / s); then
/// the [[kernel]] entries of a config that would do it.
#include <string>
#include <vector>

#include "daemon/profile/profile_data.hpp"
#include "daemon/profile/step_prediction.hpp"

namespace ak {

struct PlanRow {
  ProfiledKernel kernel;
  double f = 0;                  ///< share of GPU time
  double s = 1;                  ///< reachable speedup (the target; 1 for what autokernel cannot optimize)
  double gain = 1;               ///< the whole program's speedup from this kernel alone
  bool supported = false;        ///< a kernel type of this build
  std::vector<long long> shape;  ///< in the type's terms; empty when unknown
  std::string shape_source;      ///< where the shape came from, or why it is unknown
};

struct Plan {
  std::vector<PlanRow> rows;     ///< the top kernels by share
  double target = 2;
  double total_gain = 1;         ///< if every supported kernel reached its s
  /// The same as a whole step (step_prediction.hpp), from the profile's own window: the kernel-time
  /// one, saying why, where the profile cannot say the CPU's part.
  StepPrediction whole_step;
};

/// The whole step of a profile's window with every planned row at its s, and each planned module's
/// CPU time per call less what its op leaves (one launch's share of the module's CPU time in place of
/// the row's launches). The window's CPU time is its span when the GPU waited in it (over 2% of the
/// span idle): the CPU issued the kernels no faster than the span. Where the GPU never waited, or the
/// profile records no GPU busy time or module CPU time, the kernel-time prediction, saying why.
StepPrediction plan_whole_step(const Profile& p, const std::vector<PlanRow>& rows);

/// The share of GPU time under which a kernel is not worth a run of the loop.
constexpr double kWorthARun = 0.005;

/// Amdahl's law for one part: share f sped up by s.
double amdahl(double f, double s);

Plan make_plan(const Profile& p, size_t top, double target_speedup);
std::string plan_table(const Plan& plan);
/// [[kernel]] entries; a kernel whose shape is unknown is written commented out, saying what to fill in.
std::string plan_toml(const Plan& plan, const std::string& profile_name);

}  // namespace ak
