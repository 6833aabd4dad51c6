#pragma once
/// What `autokernel verify` concludes from a model's runs (daemon/export/package/autokernel_ops/
/// verify.py): whether the outputs with the exported ops agree with the model's, and the
/// end-to-end speedup beside the one the Amdahl plan predicts.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "daemon/profile/profile_data.hpp"
#include "daemon/profile/step_prediction.hpp"

namespace ak {

/// A model output against the same model's fp32 output.
struct OutputError {
  double rel_l2 = 0;   ///< ||out - ref|| / ||ref||
  double max_abs = 0;
  bool finite = true;
};

/// The error a run in `dtype` may have whatever PyTorch's own is: the dtype's unit roundoff (fp16
/// 2^-11, bf16 2^-8, fp32 2^-24) times 2, for a model so small that its own error is near zero.
double error_floor(const std::string& dtype);

struct Agreement {
  bool agrees = false;
  double allowed = 0;   ///< the largest rel_l2 accepted
  std::string why;      ///< a sentence for the report
};

/// The exported ops agree when their output is finite and within twice the model's own error in
/// `dtype` (eager PyTorch against fp32), or within error_floor: a kernel that rounds as well as
/// PyTorch's, in another order, stays near the model's own error; a wrong kernel is far off.
Agreement judge_outputs(const OutputError& eager, const OutputError& ours, const std::string& dtype);

/// A report row's error ("rel_l2", "max_abs", "finite"); a missing number is infinite.
OutputError output_error(const nlohmann::json& row);

/// Every judgement on one report: eager with the ops against eager PyTorch; where the report has
/// them, the CUDA graph with the ops against eager PyTorch (a capture the ops broke, where the
/// graph without them captured, is a disagreement), and torch.compile with the ops, where it runs
/// any, against compile alone's own error.
struct ModelAgreement {
  bool agrees = true;
  Agreement eager;                 ///< eager with the ops
  std::vector<std::string> lines;  ///< one per judgement: "outputs: agree: ..."
};
ModelAgreement judge_report(const nlohmann::json& report, const std::string& dtype);

/// The parts: for each exported file with a measured speedup (each of a type's "files" in the
/// manifest, or the op itself in an export of one file per type), the profile rows of its type whose
/// shape matches the file's (or that have none), added up, times the share of the type's calls the
/// op served (`served`: {type: share}, from the model run; 1 where absent): a call the op declines
/// runs PyTorch's code and gains nothing.
std::vector<PredictedPart> prediction_parts(const Profile& profile, const nlohmann::json& manifest,
                                            const nlohmann::json& served = nlohmann::json::object());
/// {type: share served} of a model run's report ("served"."by_type"), or an empty object.
nlohmann::json served_shares(const nlohmann::json& report);

/// The step without the ops as the run measured it ("gpu_idle"."eager": the union of its kernels,
/// the CPU's time to issue it; "eager"."median_ms": the step); zeros where the report has none.
StepTimes eager_step_times(const nlohmann::json& report);

/// The CPU side of each replaced function the model called ("cpu_cost"."calls"): its outermost
/// calls' time in a step with the original and with the replacement, or, from a runner that measured
/// per call only, the mean call times the calls in a step ("served"); the kernels the original
/// launched per call from the profile's module row of the same class or function. An Error naming the
/// function whose time in a step the report does not give.
Result<std::vector<CpuPart>> cpu_parts(const nlohmann::json& report, const Profile& profile);

/// The whole-step prediction of a run (step_prediction.hpp) from the profile's shares, the
/// manifest's speedups and what the run measured without the ops; the kernel-time one, saying why,
/// where the run measured no CPU side.
StepPrediction predict_run(const Profile& profile, const nlohmann::json& manifest, const nlohmann::json& report);

}  // namespace ak
