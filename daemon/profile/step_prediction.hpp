#pragma once
/// What replacing some of a model's kernels and Python by ops does to its whole step. An eager
/// step has two workers that overlap: the GPU runs kernels while the CPU issues the next ones. The
/// step takes as long as the slower of the two, plus what never overlaps (the model's Python before
/// its first kernel, the last kernels after the last launch). Amdahl's law on kernel time alone
/// sees only the GPU; where the CPU is the slower worker, a replacement that issues one op in place
/// of a module's six small kernels shortens the step by the CPU time it removes.
///
///   GPU after  = GPU before x (1 - sum f (1 - 1/s))          (the kernel-time Amdahl)
///   CPU after  = CPU before - sum over replaced functions of (original's CPU time - op's) per step
///   step after = max(GPU after, CPU after) + (step before - max(GPU before, CPU before))
///   predicted speedup = step before / step after
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ak {

/// One exported kernel's part on the GPU: its share f of the profile's GPU time and the speedup s
/// the run measured for it.
struct PredictedPart {
  std::string type, shape;
  double f = 0, s = 1;
  double served = 1;  ///< the share of the type's calls its op served (verify measured it): f counts only those
};

/// Amdahl over several parts, kernel time only: 1 / ((1 - sum f) + sum f / s).
double predicted_speedup(const std::vector<PredictedPart>& parts);

/// One step of the model before the ops, in µs: the union of its kernels on the GPU, the CPU's time
/// to issue it (the GPU's queue drained first, so no launch waits for room), and the step itself.
struct StepTimes {
  double gpu_busy_us = 0, cpu_issue_us = 0, step_us = 0;
};

/// One replaced function on the CPU: its time in a step as the model calls it, with the original and
/// with the op's replacement (the replacement's own checks, its declined calls' originals and its
/// launch included), outermost calls only so that a replaced function called inside another is not
/// counted twice.
struct CpuPart {
  std::string name, type;
  double calls_per_step = 0;
  double original_us_per_step = 0, op_us_per_step = 0;
  double launches_per_call = -1;  ///< kernels the original launches per call (the profile's); -1 unknown
  double removed_us() const { return original_us_per_step - op_us_per_step; }
};

struct StepPrediction {
  double kernel_time_speedup = 1;  ///< Amdahl on the GPU alone
  /// Whether the CPU side is counted; when not, `speedup` is the kernel-time one and `why_not` says why.
  bool whole_step = false;
  std::string why_not;
  StepTimes before, after;         ///< after.step_us is the predicted step
  double not_overlapped_us = 0;    ///< the step beyond the slower worker, the same before and after
  double gpu_removed_us = 0, cpu_removed_us = 0;
  double speedup = 1;
  std::vector<PredictedPart> gpu_parts;
  std::vector<CpuPart> cpu_parts;
};

/// "CPU" when the CPU takes longer than the GPU's kernels, "GPU" otherwise.
std::string bound_by(const StepTimes& t);

/// The kernel-time prediction only, saying why the CPU is not counted.
StepPrediction kernel_time_prediction(const std::vector<PredictedPart>& gpu_parts, const std::string& why_not);

/// The whole step: `before` measured without the ops, the GPU side from `gpu_parts`, the CPU side
/// from `cpu_parts`. A step before with no GPU or CPU time gives the kernel-time prediction, saying so.
StepPrediction predict_step(const std::vector<PredictedPart>& gpu_parts, const StepTimes& before,
                            const std::vector<CpuPart>& cpu_parts);

/// The prediction in words: the kernel-time speedup with its parts, then the whole step's, which
/// worker bounds it before and after, and what each part removed.
std::string step_prediction_text(const StepPrediction& p);

/// The prediction for a report: both speedups, the times before and after, and each part.
nlohmann::json step_prediction_json(const StepPrediction& p);

}  // namespace ak
