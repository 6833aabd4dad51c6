#pragma once
/// The whole evaluation of one candidate inside the worker: contract check, NVRTC compile, the
/// five stages, then the judged timing at the benchmark shape (paired with the current best when
/// one is given) and the roofline. The daemon never calls this directly: it goes through an
/// Evaluator. The steps common to every type are in evaluate.cpp; the rest of a built-in type's
/// in builtin_evaluation.cpp, of a user type's in user_evaluation.cpp; the decisions they take,
/// as pure functions, in evaluation_decisions.hpp.
#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "harness/evaluation/compiled_bests.hpp"
#include "harness/evaluation/shared_compiles.hpp"
#include "harness/judging/counters_pass.hpp"
#include "harness/judging/device_peaks.hpp"
#include "harness/judging/evaluation_seeds.hpp"
#include "harness/judging/stages.hpp"
#include "harness/judging/verdict.hpp"
#include "harness/module/device_inputs.hpp"
#include "harness/module/kernel_launch.hpp"
#include "harness/user_types/user_reference.hpp"

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
  /// Also when the pairing does not show the candidate faster than the best ([harness] counters_for_all).
  bool counters_for_all = false;
  /// A folder where the workers of one run leave the compiles of candidates that may be kept, and
  /// find a best another worker compiled (SharedCompiles); empty: each worker compiles its own.
  std::string shared_compiles;
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
  /// What a request asks for, read and checked before anything is compiled.
  struct Job {
    const KernelSpec* spec = nullptr;   ///< the version of the type's contract the file declares
    DType dtype = DType::F32;           ///< the dtype timed
    Shape shape;                        ///< the shape timed
    EvaluationSeeds seeds;
    std::chrono::steady_clock::time_point started;
  };
  /// A candidate that compiled and loaded.
  struct CompiledCandidate {
    CompileOutput output;    ///< loaded again for the timing, beside the best
    LaunchableKernel kernel;
  };

  // The steps of evaluate(), in order. Each fills the verdict; an empty result ends the evaluation.
  /// The seeds, the request's user type registered, the file's spec, the dtype and the shape.
  std::optional<Job> read_request(const EvalRequest& req, Verdict& v);
  /// The compile stage: the candidate compiled, its statistics recorded, loaded on the GPU.
  std::optional<CompiledCandidate> compile_step(const EvalRequest& req, const Job& job, Verdict& v,
                                                const StageListener& on_stage);

  /// The rest of evaluate() for a built-in type, after the compile: the five stages, the
  /// benchmark, then the counters pass (harness/evaluation/builtin_evaluation.cpp).
  Verdict evaluate_builtin(const EvalRequest& req, const Job& job, const CompiledCandidate& cand, Verdict v,
                           const StageListener& on_stage, const VerdictListener& on_settled);
  /// The benchmark stage of a built-in type: the judged timing, the roofline, the baselines. False
  /// when the candidate did not pass it; the verdict then says why.
  bool benchmark_builtin(const EvalRequest& req, const Job& job, const CompiledCandidate& cand,
                         const LaunchableKernel& reference, size_t stages_peak_bytes, Verdict& v,
                         const StageListener& on_stage);
  /// The baselines (cuBLAS or the reference kernel, the starter) and the speedup against them.
  void time_baselines(const EvalRequest& req, const Job& job, double median_us, Verdict& v);
  /// The reference of a built-in type, compiled once: `validate` writes fp32, `baseline` the input dtype.
  struct Reference {
    LaunchableKernel validate, baseline;
  };
  Result<Reference*> reference(const KernelSpec& spec);
  /// Times a trusted kernel (reference, starter) at a shape; its outputs are not checked.
  Result<Timing> time_at(const KernelSpec& spec, const LaunchableKernel& k, DType d, const Shape& shape,
                         const EvalRequest& req, bool& sticky);
  /// The median time of a baseline (baseline_name: cuBLAS, the reference or the starter), once per
  /// shape and dtype. `sticky` is set when timing them broke the context.
  Result<double> cached_time(const std::string& what, const KernelSpec& spec, DType d, const Shape& shape,
                             const EvalRequest& req, bool& sticky);

  /// The rest of evaluate() for a user type, after the compile: the five stages and the judged
  /// timing through its reference process, the baseline PyTorch eager, then the counters pass
  /// (harness/evaluation/user_evaluation.cpp).
  Verdict evaluate_user(const EvalRequest& req, const Job& job, const UserTypeSpec& user, const CompiledCandidate& cand,
                        Verdict v, const StageListener& on_stage, const VerdictListener& on_settled);
  /// The benchmark stage of a user type: the judged timing, the roofline, the PyTorch baseline.
  bool benchmark_user(const EvalRequest& req, const Job& job, const CompiledCandidate& cand, UserReference& ref,
                      size_t stages_peak_bytes, Verdict& v, const StageListener& on_stage);
  /// PyTorch eager (and torch.compile) at the timed shape, once per shape and dtype, and the
  /// speedup against it. A failure here is the harness's, said in the notes.
  void time_pytorch_baseline(const EvalRequest& req, const Job& job, UserReference& ref, double median_us, Verdict& v,
                             const StageListener& on_stage);
  /// The reference process of a user type, started at its first evaluation and kept while it runs.
  Result<UserReference*> user_reference(const UserTypeSpec& user);

  // What both kinds of type share.
  /// True, with the reason in v.counters, when a passed candidate's counters are not to be read
  /// (counters_skipped): then its type's counters operands need not even be made.
  bool counters_skipped_for(const EvalRequest& req, Verdict& v);
  /// The hardware counters of a passed candidate, read in the counters pass on `operands` (its
  /// type's); the verdict settled before it goes to `on_settled` first.
  void read_counters(const EvalRequest& req, const Job& job, const CompiledCandidate& cand,
                     CountersPassOperands& operands, Verdict& v, const StageListener& on_stage,
                     const VerdictListener& on_settled);
  /// The current best of a request, compiled once per source (loaded afresh for each timing): kept
  /// by this worker, else left by another in `shared`, else compiled now and left there.
  Result<const CompileOutput*> best_compiled(const KernelSpec& spec, const std::string& source, const std::string& arch,
                                             const SharedCompiles& shared);
  /// A candidate the benchmark did not show slower than its best (or that had none) may be kept:
  /// its compile goes to the run's shared compiles, for the workers that will time beside it.
  void share_compile(const EvalRequest& req, const Job& job, const CompileOutput& candidate, Verdict& v);
  /// The files to time, each loaded afresh, in an order drawn from `choice_seed`; in the order given.
  Result<std::vector<LaunchableKernel>> timing_modules(const KernelSpec& spec,
                                                       const std::vector<const CompileOutput*>& compiled,
                                                       uint64_t choice_seed);
  /// The candidate, and the current best beside it when the request names one; a best that no
  /// longer compiles or loads (kept by an older autokernel under older rules) leaves the candidate
  /// timed alone, and a note says so, rather than failing every candidate after it.
  Result<std::vector<LaunchableKernel>> files_to_time(const EvalRequest& req, const Job& job,
                                                      const CompileOutput& candidate, Verdict& v);

  std::unique_ptr<GpuContext> gpu_;
  std::unique_ptr<DeviceInputs> inputs_;
  std::unique_ptr<DeviceChecks> checks_;
  DevicePeaks peaks_;
  CompiledBests bests_;
  std::map<std::string, Reference> references_;
  std::map<std::string, double> time_cache_;
  uint64_t scratch_cap_bytes_ = kDefaultScratchCapMib << 20;   ///< the request's, for every load of its files
  /// Per user type (destroyed before gpu_: each unmaps and frees its pool in the context).
  std::map<std::string, std::unique_ptr<UserReference>> user_references_;
};

}  // namespace ak
