#pragma once
/// The whole evaluation of one candidate inside the worker: contract check, NVRTC compile, the
/// five stages, then the judged timing at the benchmark shape (paired with the current best when
/// one is given) and the roofline. The daemon never calls this directly: it goes through an
/// Evaluator.
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "harness/module/device_inputs.hpp"
#include "harness/judging/device_peaks.hpp"
#include "harness/module/kernel_launch.hpp"
#include "harness/judging/stages.hpp"
#include "harness/user_types/user_reference.hpp"
#include "harness/judging/verdict.hpp"

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
  /// A user type's spec as UserTypeSpec::to_json() writes it (its text and its reference's
  /// source), so the worker registers the type without reading a user's file; null for built-in
  /// types.
  nlohmann::json user_type;
  /// User types: also time the module under torch.compile (minutes of autotuning, once per shape).
  bool torch_compile = true;
  /// A launch plan's scratch buffers together may take at most this ([harness] scratch_cap_mib).
  uint64_t scratch_cap_mib = kDefaultScratchCapMib;
  /// After the judged timing, one more launch reads the hardware counters ([harness] counters).
  bool counters = true;
};
void to_json(nlohmann::json& j, const EvalRequest& r);
void from_json(const nlohmann::json& j, EvalRequest& r);

/// Registers the request's user type (UserTypeSpec::from_json, then register_user_type, which
/// accepts the same text again), so that the spec of `kernel_type` resolves; nothing to do for a
/// built-in type. An error when the JSON is not a spec or names another type than kernel_type.
Status register_request_type(const EvalRequest& r);

class Harness {
 public:
  static Result<std::unique_ptr<Harness>> open(int device);
  Verdict evaluate(const EvalRequest& req, const StageListener& on_stage = {}, const VerdictListener& on_settled = {});
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

  /// The rest of evaluate() for a user type, after the compile: the five stages and the judged
  /// timing through its reference process, the baseline PyTorch eager (harness/evaluation/evaluate_user.cpp).
  Verdict evaluate_user(const EvalRequest& req, const KernelSpec& spec, const UserTypeSpec& user,
                        const LaunchableKernel& cand, const CompileOutput& compiled, DType dtype, const Shape& shape,
                        uint64_t timing_choices, Verdict v, const StageListener& on_stage);
  /// The reference process of a user type, started at its first evaluation and kept while it runs.
  Result<UserReference*> user_reference(const UserTypeSpec& user);

  std::unique_ptr<GpuContext> gpu_;
  std::unique_ptr<DeviceInputs> inputs_;
  std::unique_ptr<DeviceChecks> checks_;
  DevicePeaks peaks_;
  std::map<std::string, std::pair<std::string, CompileOutput>> best_;   ///< per type: source, compiled
  std::map<std::string, Reference> references_;
  std::map<std::string, double> time_cache_;
  uint64_t scratch_cap_bytes_ = kDefaultScratchCapMib << 20;   ///< the request's, for every load of its files
  /// Per user type (destroyed before gpu_: each unmaps and frees its pool in the context).
  std::map<std::string, std::unique_ptr<UserReference>> user_references_;
};

}  // namespace ak
