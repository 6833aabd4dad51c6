#pragma once
/// From a profile to a plan: for each kernel worth optimizing, its share f of the GPU time, the
/// speedup s it could reach, and what that gives the whole program, 1 / ((1 - f) + f / s); then
/// the [[kernel]] entries of a config that would do it.
#include <string>
#include <vector>

#include "daemon/profile/profile_data.hpp"

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
};

/// The share of GPU time under which a kernel is not worth a run of the loop.
constexpr double kWorthARun = 0.005;

/// Amdahl's law for one part: share f sped up by s.
double amdahl(double f, double s);

Plan make_plan(const Profile& p, size_t top, double target_speedup);
std::string plan_table(const Plan& plan);
/// [[kernel]] entries; a kernel whose shape is unknown is written commented out, saying what to fill in.
std::string plan_toml(const Plan& plan, const std::string& profile_name);

}  // namespace ak
