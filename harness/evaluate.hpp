#pragma once
/// The whole evaluation of one candidate inside the worker: contract check, NVRTC compile, the
/// five stages, then the judged timing at the benchmark shape (paired with the current best when
/// one is given) and the roofline. The daemon never calls this directly: it goes through an
/// Evaluator.
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "harness/device_inputs.hpp"
#include "harness/device_peaks.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/stages.hpp"
#include "harness/verdict.hpp"

namespace ak {

/// How many of a candidate's timed launches are checked against the reference.
inline constexpr int kCheckedLaunches = 4;

/// One candidate to judge.
struct EvalRequest {
  std::string kernel_type;
  std::string source;
  std::string dtype = "fp16";          ///< the dtype to time (all of the spec's are validated)
  Shape shape;                         ///< the shape to time; empty: the spec's benchmark shape
  std::string arch;                    ///< empty: the device's own
  uint64_t seed = 0;                   ///< 0: every choice drawn from the CSPRNG (EvaluationSeeds)
  std::optional<double> baseline_us;   ///< the user's time today; else the reference kernel's
  bool time_starter = true;            ///< also time the type's starter (cached per shape)
  /// The current best file: timed beside the candidate, launch for launch, for the keep decision
  /// (Verdict::paired). Empty: the candidate is timed alone.
  std::string best_source;
  int warmup = 10, repetitions = 100;
};
void to_json(nlohmann::json& j, const EvalRequest& r);
void from_json(const nlohmann::json& j, EvalRequest& r);

class Harness {
 public:
  static Result<std::unique_ptr<Harness>> open(int device);
  Verdict evaluate(const EvalRequest& req, const StageListener& on_stage = {});
  GpuContext& gpu() { return *gpu_; }

 private:
  /// The reference of a type, compiled once: `validate` writes fp32, `baseline` the input dtype.
  struct Reference {
    LaunchableKernel validate, baseline;
  };
  Result<Reference*> reference(const KernelSpec& spec);
  /// Times a trusted kernel (reference, starter) at a shape; its outputs are not checked.
  Result<Timing> time_at(const KernelSpec& spec, const LaunchableKernel& k, DType d, const Shape& shape,
                         const EvalRequest& req, bool& sticky);
  /// The current best of a request, compiled once per source (loaded afresh for each timing).
  Result<const CompileOutput*> best_compiled(const KernelSpec& spec, const std::string& source, const std::string& arch);
  /// The files to time, each loaded afresh, in an order drawn from `choice_seed`; in the order given.
  Result<std::vector<LaunchableKernel>> timing_modules(const KernelSpec& spec,
                                                       const std::vector<const CompileOutput*>& compiled,
                                                       uint64_t choice_seed);
  /// The median time of the reference (what == "reference") or of the starter, once per
  /// shape and dtype. `sticky` is set when timing them broke the context.
  Result<double> cached_time(const std::string& what, const KernelSpec& spec, DType d, const Shape& shape,
                             const EvalRequest& req, bool& sticky);

  std::unique_ptr<GpuContext> gpu_;
  std::unique_ptr<DeviceInputs> inputs_;
  std::unique_ptr<DeviceChecks> checks_;
  DevicePeaks peaks_;
  std::map<std::string, std::pair<std::string, CompileOutput>> best_;   ///< per type: source, compiled
  std::map<std::string, Reference> references_;
  std::map<std::string, double> time_cache_;
};

}  // namespace ak
