#pragma once
/// The five correctness stages of docs/design.md, in their fixed order: smoke, shape sweep,
/// numerical stability, determinism, edge cases. Each run draws fresh inputs from its own seed,
/// poisons the outputs first, checks every element against the reference and checks that the
/// inputs and the module's own memory were left untouched. The reference runs only after the
/// candidate's launch, so no expected output lies in device memory while a candidate runs.
#include <functional>
#include <optional>
#include <string>

#include "harness/judging/compare.hpp"
#include "harness/module/device_checks.hpp"
#include "harness/gpu/inputs.hpp"
#include "harness/module/kernel_launch.hpp"
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

class CaseRunner {
 public:
  CaseRunner(GpuContext& gpu, const DeviceChecks& checks, const KernelSpec& spec, const LaunchableKernel& candidate,
             const LaunchableKernel& reference)
      : gpu_(gpu), checks_(checks), spec_(spec), cand_(candidate), ref_(reference) {}

  /// Runs the candidate once (repeats > 1: again on the same inputs, bitwise equal each time).
  std::optional<StageFailure> run(const RunCase& c, int repeats = 1);
  /// The most device memory the candidate's buffers took, in bytes.
  size_t peak_bytes() const { return peak_bytes_; }
  /// After a launch of `k`: empty when it left its module memory as it found it, else where not.
  Result<std::string> module_memory_change(const LaunchableKernel& k);

 private:
  GpuContext& gpu_;
  const DeviceChecks& checks_;
  const KernelSpec& spec_;
  const LaunchableKernel& cand_;
  const LaunchableKernel& ref_;
  size_t peak_bytes_ = 0;
  DeviceBuffer memory_slot_;   ///< where check_module_memory writes the first changed byte
};

/// The rows a sampled validation checks (KernelSpec::validation_rows): every row when there are
/// no more than `want`, else `want` distinct rows from the seed, the first and last among them.
std::vector<int32_t> pick_sample_rows(int64_t rows, int want, uint64_t seed);

/// Called as each stage begins, so a watchdog can give every stage its own time limit.
using StageListener = std::function<void(const std::string& stage)>;
/// Told a candidate's verdict once it is settled, before the work that cannot change it (the
/// counters pass): a worker that dies in that work still has a verdict to give.
using VerdictListener = std::function<void(const Verdict& settled)>;

/// Runs the stages in order into v.stages, stopping at the first failure, which fills the
/// verdict's correctness, message and failed_* fields. Returns true when all five passed.
/// `seed` draws the cases' inputs and `sample_seed` their sampled rows (EvaluationSeeds).
bool run_five_stages(CaseRunner& runner, const KernelSpec& spec, uint64_t seed, uint64_t sample_seed, Verdict& v,
                     const StageListener& on_stage);

/// Fills the verdict's failure fields from a StageFailure.
void record_failure(const StageFailure& f, const std::string& stage, Verdict& v);

}  // namespace ak
