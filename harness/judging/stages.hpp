#pragma once
/// What every type's five stages share, built-in (harness/judging/builtin_stages.hpp) or user
/// (harness/user_types/user_stages.hpp): one run of a candidate, why a stage failed and how that
/// failure fills the verdict, and the listeners a worker's watchdog hangs on the stages.
#include <functional>
#include <string>

#include "harness/gpu/inputs.hpp"
#include "harness/judging/compare.hpp"
#include "harness/judging/verdict.hpp"

namespace ak {

/// One run of the candidate: a shape, a dtype, a way of drawing the data, a seed.
struct RunCase {
  Shape shape;
  DType dtype;
  Recipe recipe = Recipe::Normal;
  uint64_t seed = 0;
  uint64_t sample_seed = 0;   ///< which rows a sampled validation checks: not derived from `seed`
};

/// Why a stage failed, with where.
struct StageFailure {
  Correctness correctness = Correctness::Fail;
  std::string message;
  RunCase at;
  Comparison comparison;
  bool context_lost = false;
  /// The harness failed (Error::harness: its own allocation, its reference), not the candidate.
  bool harness = false;
};

/// Called as each stage begins, so a watchdog can give every stage its own time limit.
using StageListener = std::function<void(const std::string& stage)>;
/// Told a candidate's verdict once it is settled, before the work that cannot change it (the
/// counters pass): a worker that dies in that work still has a verdict to give.
using VerdictListener = std::function<void(const Verdict& settled)>;

/// Fills the verdict's failure fields from a StageFailure.
void record_failure(const StageFailure& f, const std::string& stage, Verdict& v);

}  // namespace ak
