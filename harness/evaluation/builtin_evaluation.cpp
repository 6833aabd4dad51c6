// Harness::evaluate_builtin: a built-in type's candidate after its compile, judged by the type's
// reference kernel: the five stages, the judged timing beside the current best, the roofline, the
// baselines (the reference kernel or cuBLAS, the starter), then the counters pass.
#include <algorithm>
#include <chrono>

#include "harness/compile/candidate_compile.hpp"
#include "harness/compile/kernel_contract.hpp"
#include "harness/evaluation/evaluate.hpp"
#include "harness/evaluation/evaluation_decisions.hpp"
#include "harness/gpu/cublas_gemm.hpp"
#include "harness/judging/builtin_stages.hpp"
#include "harness/judging/builtin_timing.hpp"
#include "harness/judging/builtin_counters_pass.hpp"
#include "harness/judging/roofline.hpp"

namespace ak {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

CompileRequest compile_request(const KernelSpec& spec, const std::string& source, const std::string& arch,
                               bool reference) {
  if (!reference) return candidate_request(spec, source, spec.type + ".cu", arch);
  CompileRequest c{source, spec.type + "_reference.cu", reference_expressions(spec), arch};
  return c;
}

}  // namespace

Result<Harness::Reference*> Harness::reference(const KernelSpec& spec) {
  const std::string key = spec.type + " v" + std::to_string(spec.contract_version);  // versions differ in arguments
  if (auto it = references_.find(key); it != references_.end()) return &it->second;
  auto compiled = nvrtc_compile(compile_request(spec, spec.reference_source, gpu_->info().arch, true));
  if (!compiled) return compiled.error();
  if (!compiled->ok) return error("the " + spec.type + " reference does not compile (a harness bug): " + compiled->log);
  auto validate = LaunchableKernel::reference(*gpu_, spec, *compiled, ReferenceOutput::Fp32);
  if (!validate) return validate.error();
  auto baseline = LaunchableKernel::reference(*gpu_, spec, *compiled, ReferenceOutput::InputDtype);
  if (!baseline) return baseline.error();
  Reference r{std::move(*validate), std::move(*baseline)};
  return &references_.emplace(key, std::move(r)).first->second;
}

Result<Timing> Harness::time_at(const KernelSpec& spec, const LaunchableKernel& k, DType d, const Shape& shape,
                                const EvalRequest& req, bool& sticky) {
  auto seed = req.seed ? Result<uint64_t>(mix_seed(req.seed ^ 0xb0b0)) : csprng_u64();
  if (!seed) return seed.error();
  BuiltinTimingPlan plan{{req.warmup, req.repetitions}, 0, *seed, *seed};
  auto t = builtin_timing(*gpu_, *inputs_, *checks_, spec, shape, d, {&k}, nullptr, plan, sticky);
  if (!t) return t.error();
  return t->timings.at(0);
}

Result<double> Harness::cached_time(const std::string& what, const KernelSpec& spec, DType d, const Shape& shape,
                                    const EvalRequest& req, bool& sticky) {
  const std::string key = what + "|" + spec.type + "|" + shape_str(shape) + "|" + dtype_name(d);
  if (auto it = time_cache_.find(key); it != time_cache_.end()) return it->second;
  Result<Timing> t = error("");
  if (what == "cuBLAS") {
    auto us = time_cublas_gemms(*gpu_, spec.cublas_gemms(shape), d, std::max(10, req.repetitions / 4));
    if (!us) return error("timing the cuBLAS baseline of " + spec.type + " failed: " + us.error().message);
    return time_cache_[key] = *us;
  } else if (what == "reference") {
    auto ref = reference(spec);
    if (!ref) return ref.error();
    t = time_at(spec, (*ref)->baseline, d, shape, req, sticky);
  } else {
    auto compiled = nvrtc_compile(compile_request(spec, spec.starter_source(), gpu_->info().arch, false));
    if (!compiled) return compiled.error();
    if (!compiled->ok) return error("the " + spec.type + " starter does not compile: " + compiled->log);
    auto k = LaunchableKernel::candidate(*gpu_, spec, *compiled);
    if (!k) return k.error();
    t = time_at(spec, *k, d, shape, req, sticky);
  }
  if (!t) return error("timing the " + what + " of " + spec.type + " failed: " + t.error().message);
  return time_cache_[key] = t->median_us;
}

Verdict Harness::evaluate_builtin(const EvalRequest& req, const Job& job, const CompiledCandidate& cand, Verdict v,
                                  const StageListener& on_stage, const VerdictListener& on_settled) {
  auto ref = reference(*job.spec);
  if (!ref) {
    v.message = ref.error().message;
    return v;
  }
  BuiltinCaseRunner runner(*gpu_, *checks_, *job.spec, cand.kernel, (*ref)->validate);
  if (!run_builtin_stages(runner, *job.spec, job.seeds.stage_inputs, job.seeds.sampled_rows, v, on_stage)) return v;
  if (!benchmark_builtin(req, job, cand, (*ref)->validate, runner.peak_bytes(), v, on_stage)) return v;
  v.correctness = Correctness::Pass;
  v.message = "passed all five stages";
  if (counters_skipped_for(req, v)) return v;
  auto operands = builtin_counters_operands(*gpu_, *inputs_, *checks_, *job.spec, job.shape, job.dtype,
                                            (*ref)->validate, mix_seed(job.seeds.timing_inputs ^ 0xc0c0));
  read_counters(req, job, cand, *operands, v, on_stage, on_settled);
  return v;
}

bool Harness::benchmark_builtin(const EvalRequest& req, const Job& job, const CompiledCandidate& cand,
                                const LaunchableKernel& reference, size_t stages_peak_bytes, Verdict& v,
                                const StageListener& on_stage) {
  if (on_stage) on_stage("benchmark");
  const auto tb = std::chrono::steady_clock::now();
  auto fail = [&](const StageFailure& f) {
    record_failure(f, "benchmark", v);
    v.stages.push_back({"benchmark", false, since(tb), f.message});
    return false;
  };
  auto modules = files_to_time(req, job, cand.output, v);
  if (!modules) {
    StageFailure f;
    f.message = modules.error().message;
    return fail(f);
  }
  std::vector<const LaunchableKernel*> timed;
  for (auto& m : *modules) timed.push_back(&m);
  bool sticky = false;
  BuiltinTimingPlan plan{{req.warmup, req.repetitions}, kCheckedLaunches, job.seeds.timing_inputs,
                         job.seeds.timing_choices};
  auto judged =
      builtin_timing(*gpu_, *inputs_, *checks_, *job.spec, job.shape, job.dtype, timed, &reference, plan, sticky);
  if (!judged || judged->failures.at(0)) {
    StageFailure f = judged ? *judged->failures.at(0) : timing_error_failure(judged.error(), sticky);
    f.at = {job.shape, job.dtype, Recipe::Normal, job.seeds.timing_inputs};
    f.context_lost = sticky;
    return fail(f);
  }
  note_failing_best(judged->failures, judged->paired, v);
  const Timing timing = judged->timings.at(0);
  v.paired = judged->paired;
  v.peak_vram_mb = double(std::max(stages_peak_bytes, judged->bytes)) / (1 << 20);
  if (!timing_on_roofline(v, *job.spec, job.shape, job.dtype, timing, peaks_)) {
    v.stages.push_back({"benchmark", false, since(tb), v.message});
    return false;
  }
  time_baselines(req, job, timing.median_us, v);
  share_compile(req, job, cand.output, v);
  v.stages.push_back({"benchmark", true, since(tb),
                      std::to_string(timing.samples) + " timed launches on fresh inputs, L2 flushed before each, " +
                          std::to_string(plan.checked_launches) + " of them checked" +
                          (timed.size() == 2 ? " (as many of the best's)" : "") +
                          (v.paired.pairs ? ", paired with the current best" : "")});
  return true;
}

void Harness::time_baselines(const EvalRequest& req, const Job& job, double median_us, Verdict& v) {
  // A failure here is the harness's, not the candidate's: the verdict says so, and a broken
  // context still sends the worker away.
  for (BaselineKind k : baselines_to_time(job.spec->baseline, req.time_starter, req.baseline_us.has_value())) {
    bool lost = false;
    auto t = cached_time(baseline_name(k), *job.spec, job.dtype, job.shape, req, lost);
    if (t) baseline_field(v, k) = *t;
    else v.notes.push_back(t.error().message);
    v.context_lost = v.context_lost || lost;
  }
  const bool cublas = job.spec->baseline == Baseline::Cublas;
  settle_speedup(v, req.baseline_us, cublas ? v.cublas_us : v.reference_us, cublas ? "cuBLAS" : "reference kernel",
                 median_us);
}

}  // namespace ak
