#include "harness/evaluation/evaluate.hpp"

#include <algorithm>
#include <chrono>

#include "harness/judging/benchmark.hpp"
#include "harness/gpu/cublas_gemm.hpp"
#include "harness/compile/candidate_compile.hpp"
#include "harness/judging/counters_pass.hpp"
#include "harness/judging/evaluation_seeds.hpp"
#include "harness/judging/judged_timing.hpp"
#include "harness/compile/kernel_contract.hpp"
#include "harness/judging/roofline.hpp"
#include "kernels_cuda/contract_version.hpp"
#include "kernels_cuda/registry.hpp"

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

Verdict finish(Verdict v, std::chrono::steady_clock::time_point t0) {
  v.total_seconds = since(t0);
  return v;
}

/// Why a file of `spec`'s contract cannot be judged at `shape` beside `best_source`, or "": the
/// shape has the version's dimensions, and the file keeps the version of the kernel's kept file
/// (a version changes the arguments, so the two could not be timed on one set of inputs).
std::string contract_mismatch(const KernelSpec& spec, const std::string& best_source, const Shape& shape) {
  if (shape.size() != spec.shape_names.size())
    return "the shape " + shape_str(shape) + " has " + std::to_string(shape.size()) + " dimensions; version " +
           std::to_string(spec.contract_version) + " of the " + spec.type + " contract takes " +
           std::to_string(spec.shape_names.size()) + " (" + spec.shape_help() + "): give a shape of that version";
  if (std::string why = spec.shape_error ? spec.shape_error(shape) : ""; !why.empty())
    return "the shape " + shape_str(shape) + " is not one of the " + spec.type + " contract's: " + why;
  if (std::string why = spec.zero_dimension_error(shape); !why.empty())
    return "the shape " + shape_str(shape) + " is not one of the " + spec.type + " contract's: " + why;
  if (best_source.empty()) return "";
  const int best = declared_contract_version(best_source).value_or(spec.contract_version);
  if (best == spec.contract_version) return "";
  return "the file declares version " + std::to_string(spec.contract_version) + " of the " + spec.type +
         " contract and the kernel's kept file version " + std::to_string(best) +
         ": a kernel keeps the version it started with (write the file for version " + std::to_string(best) +
         ", or start a new run for version " + std::to_string(spec.contract_version) + ")";
}

}  // namespace

void to_json(nlohmann::json& j, const EvalRequest& r) {
  j = {{"kernel_type", r.kernel_type}, {"source", r.source}, {"dtype", r.dtype}, {"shape", r.shape},
       {"arch", r.arch}, {"seed", r.seed}, {"time_starter", r.time_starter}, {"warmup", r.warmup},
       {"repetitions", r.repetitions}, {"best_source", r.best_source}, {"counters", r.counters}};
  if (r.baseline_us) j["baseline_us"] = *r.baseline_us;
  if (!r.user_type.is_null())
    j["user_type"] = r.user_type, j["torch_compile"] = r.torch_compile, j["scratch_cap_mib"] = r.scratch_cap_mib;
}

void from_json(const nlohmann::json& j, EvalRequest& r) {
  r.kernel_type = j.at("kernel_type").get<std::string>();
  r.source = j.at("source").get<std::string>();
  r.dtype = j.value("dtype", "fp16");
  r.shape = j.value("shape", Shape{});
  r.arch = j.value("arch", "");
  r.seed = j.value("seed", uint64_t(0));
  r.best_source = j.value("best_source", "");
  r.time_starter = j.value("time_starter", true);
  r.warmup = j.value("warmup", 10);
  r.repetitions = j.value("repetitions", 100);
  if (j.contains("baseline_us")) r.baseline_us = j["baseline_us"].get<double>();
  r.user_type = j.value("user_type", nlohmann::json());
  r.torch_compile = j.value("torch_compile", true);
  r.counters = j.value("counters", true);
  r.scratch_cap_mib = std::min<uint64_t>(j.value("scratch_cap_mib", kDefaultScratchCapMib), uint64_t(1) << 24);
}

Status register_request_type(const EvalRequest& r) {
  if (r.user_type.is_null()) return ok();
  auto spec = UserTypeSpec::from_json(r.user_type);
  if (!spec) return error("the request's user type cannot be read: " + spec.error().message);
  if (spec->name != r.kernel_type)
    return error("the request is for kernel type '" + r.kernel_type + "' but carries the user type '" + spec->name + "'");
  return register_user_type(*spec);
}

Result<std::unique_ptr<Harness>> Harness::open(int device) {
  auto gpu = GpuContext::open(device);
  if (!gpu) return gpu.error();
  std::unique_ptr<Harness> h(new Harness());
  h->gpu_ = std::move(*gpu);
  auto inputs = DeviceInputs::open(*h->gpu_);
  if (!inputs) return inputs.error();
  h->inputs_ = std::move(*inputs);
  auto checks = DeviceChecks::open(*h->gpu_);
  if (!checks) return checks.error();
  h->checks_ = std::move(*checks);
  auto peaks = device_peaks(*h->gpu_);
  if (!peaks) return peaks.error();
  h->peaks_ = *peaks;
  return h;
}

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
  JudgedTimingPlan plan{{req.warmup, req.repetitions}, 0, *seed, *seed};
  auto t = judged_timing(*gpu_, *inputs_, *checks_, spec, shape, d, {&k}, nullptr, plan, sticky);
  if (!t) return t.error();
  return t->timings.at(0);
}

Result<const CompileOutput*> Harness::best_compiled(const KernelSpec& spec, const std::string& source,
                                                    const std::string& arch) {
  if (auto it = best_.find(spec.type); it != best_.end() && it->second.first == source) return &it->second.second;
  best_.erase(spec.type);  // one per type: the best changes only when a candidate is kept
  auto compiled = compile_candidate(spec, source, spec.type + ".cu", arch);
  if (!compiled) return compiled.error();
  if (!compiled->ok) return error("the current best does not compile any more: " + compiled->message);
  return &best_.emplace(spec.type, std::make_pair(source, std::move(compiled->output))).first->second.second;
}

Result<std::vector<LaunchableKernel>> Harness::timing_modules(const KernelSpec& spec,
                                                              const std::vector<const CompileOutput*>& compiled,
                                                              uint64_t choice_seed) {
  // Loaded afresh for every timing, in an order drawn at random: neither module's place in
  // memory, nor its age, tells a kernel whether it is the candidate or the best.
  std::vector<std::optional<LaunchableKernel>> loaded(compiled.size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    const size_t at = compiled.size() == 2 && (choice_seed >> 1 & 1) ? 1 - i : i;
    auto k = LaunchableKernel::candidate(*gpu_, spec, *compiled[at], scratch_cap_bytes_);
    if (!k) return error((at == 0 ? "the candidate" : "the current best") + std::string(" cannot be loaded: ") + k.error().message);
    loaded[at] = std::move(*k);
  }
  std::vector<LaunchableKernel> out;
  for (auto& k : loaded) out.push_back(std::move(*k));
  return out;
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

Verdict Harness::evaluate(const EvalRequest& req, const StageListener& on_stage, const VerdictListener& on_settled) {
  const auto t0 = std::chrono::steady_clock::now();
  Verdict v;
  v.kernel_type = req.kernel_type;
  v.gpu = gpu_->info().name;
  v.arch = req.arch.empty() ? gpu_->info().arch : req.arch;
  auto seeds = req.seed ? Result<EvaluationSeeds>(EvaluationSeeds::from(req.seed)) : EvaluationSeeds::fresh();
  if (!seeds) {
    v.message = seeds.error().message;
    return finish(v, t0);
  }
  v.seed = seeds->stage_inputs;
  v.fixed_seed = seeds->fixed;
  if (seeds->fixed)
    v.notes.push_back("made with the fixed seed " + std::to_string(req.seed) +
                      ": its inputs and checked launches could be known in advance; the loop never uses one");
  if (auto s = register_request_type(req); !s) {
    v.message = s.error().message;
    v.harness_error = true;
    return finish(v, t0);
  }
  auto file_spec = spec_for_file(req.kernel_type, req.source);
  auto dtype = parse_dtype(req.dtype);
  if (!file_spec || !dtype) {
    v.message = !file_spec ? file_spec.error().message : "unknown dtype '" + req.dtype + "'";
    if (!file_spec && find_spec(req.kernel_type)) v.correctness = Correctness::CompileError, v.failed_stage = "compile";
    return finish(v, t0);
  }
  const KernelSpec* spec = *file_spec;
  const Shape shape = req.shape.empty() ? spec->bench_shape : req.shape;
  v.dtype = dtype_name(*dtype);
  v.shape = shape_str(shape);
  if (std::string why = contract_mismatch(*spec, req.best_source, shape); !why.empty()) {
    v.correctness = Correctness::CompileError;
    v.failed_stage = "compile";
    v.message = why;
    return finish(v, t0);
  }

  // Compile.
  if (on_stage) on_stage("compile");
  auto tc = std::chrono::steady_clock::now();
  auto fail_compile = [&](const std::string& msg, const std::string& log) {
    v.correctness = Correctness::CompileError;
    v.message = msg;
    v.compile_log = log;
    v.failed_stage = "compile";
    v.stages.push_back({"compile", false, since(tc), msg});
    return finish(v, t0);
  };
  auto compiled = compile_candidate(*spec, req.source, spec->type + ".cu", v.arch);
  if (!compiled) return fail_compile(compiled.error().message, "");
  if (!compiled->ok) return fail_compile(compiled->message, compiled->output.log);
  for (size_t i = 0; i < spec->dtypes.size(); ++i)
    if (spec->dtypes[i] == *dtype) {
      const FunctionInfo& f = compiled->output.functions[i];
      v.registers = f.registers;
      v.spill_bytes = f.spill_stores + f.spill_loads;
      v.static_smem_bytes = f.static_smem_bytes;
    }
  scratch_cap_bytes_ = req.scratch_cap_mib << 20;
  auto cand = LaunchableKernel::candidate(*gpu_, *spec, compiled->output, scratch_cap_bytes_);
  if (!cand) return fail_compile("the compiled module cannot be used: " + cand.error().message, compiled->output.log);
  if (v.registers < 0) {  // NVRTC's log carried no ptxas statistics: ask the driver
    FunctionInfo f = cand->attributes(*dtype);
    v.registers = f.registers;
    v.spill_bytes = f.stack_bytes;
    v.static_smem_bytes = f.static_smem_bytes;
  }
  v.block_threads = cand->block_threads();
  v.rows_per_block = cand->rows_per_block();
  v.stages.push_back({"compile", true, since(tc), std::to_string(v.registers) + " registers, " +
                                                      std::to_string(v.spill_bytes) + " bytes spilled"});
  if (const UserTypeSpec* user = find_user_type(spec->type)) {
    Verdict u = evaluate_user(req, *spec, *user, *cand, compiled->output, *dtype, shape, seeds->timing_choices, v, on_stage);
    if (u.passed())
      u.counters = HardwareCounters::unavailable_because(
          "not read for user types: their launches are judged by the PyTorch reference process, which the counters "
          "pass does not drive");
    return finish(u, t0);
  }
  auto ref = reference(*spec);
  if (!ref) {
    v.message = ref.error().message;
    return finish(v, t0);
  }

  // The five stages.
  CaseRunner runner(*gpu_, *checks_, *spec, *cand, (*ref)->validate);
  if (!run_five_stages(runner, *spec, seeds->stage_inputs, seeds->sampled_rows, v, on_stage)) return finish(v, t0);

  // Benchmark: the judged timing at the timed shape, beside the current best when there is one.
  if (on_stage) on_stage("benchmark");
  auto tb = std::chrono::steady_clock::now();
  auto bench_fail = [&](const StageFailure& f) {
    record_failure(f, "benchmark", v);
    v.stages.push_back({"benchmark", false, since(tb), f.message});
    return finish(v, t0);
  };
  std::vector<const CompileOutput*> files{&compiled->output};
  if (!req.best_source.empty()) {
    // A best kept by an older autokernel may break today's rules (module state): the candidate
    // is then timed alone, and the verdict says so, rather than failing every candidate after it.
    if (auto best = best_compiled(*spec, req.best_source, v.arch); best) files.push_back(*best);
    else v.notes.push_back("not paired with the current best (" + best.error().message + "): judged on its median alone");
  }
  auto modules = timing_modules(*spec, files, seeds->timing_choices);
  if (!modules && files.size() == 2) {
    v.notes.push_back("not paired with the current best (" + modules.error().message + "): judged on its median alone");
    files.pop_back();
    modules = timing_modules(*spec, files, seeds->timing_choices);
  }
  if (!modules) {
    StageFailure f;
    f.message = modules.error().message;
    return bench_fail(f);
  }
  std::vector<const LaunchableKernel*> timed;
  for (auto& m : *modules) timed.push_back(&m);
  bool sticky = false;
  JudgedTimingPlan plan{{req.warmup, req.repetitions}, kCheckedLaunches, seeds->timing_inputs, seeds->timing_choices};
  auto judged = judged_timing(*gpu_, *inputs_, *checks_, *spec, shape, *dtype, timed, &(*ref)->validate, plan, sticky);
  if (!judged || judged->failures.at(0)) {
    StageFailure f;
    if (judged) f = *judged->failures.at(0);
    else f.correctness = sticky ? Correctness::Crash : Correctness::Fail, f.message = judged.error().message, f.harness = judged.error().harness;
    f.at = {shape, *dtype, Recipe::Normal, seeds->timing_inputs};
    f.context_lost = sticky;
    return bench_fail(f);
  }
  if (judged->failures.size() == 2 && judged->failures[1]) {
    judged->paired.best_failure = judged->failures[1]->message;
    v.notes.push_back("the current best failed its own checks beside this candidate: " + judged->failures[1]->message);
  }
  const Result<Timing> timing = judged->timings.at(0);
  v.paired = judged->paired;
  v.peak_vram_mb = double(std::max(runner.peak_bytes(), judged->bytes)) / (1 << 20);
  if (!timing_on_roofline(v, *spec, shape, *dtype, *timing, peaks_)) {
    v.stages.push_back({"benchmark", false, since(tb), v.message});
    return finish(v, t0);
  }
  // The baseline and the starter: a failure here is the harness's, not the candidate's; the
  // verdict says so, and a broken context still sends the worker away.
  // A sampled reference computes only some rows: the cuBLAS types are not timed against it.
  const bool cublas = spec->baseline == Baseline::Cublas;
  std::vector<std::pair<std::string, double*>> what = {{cublas ? "cuBLAS" : "reference", cublas ? &v.cublas_us : &v.reference_us}};
  if (req.time_starter) what.push_back({"starter", &v.starter_us});
  for (auto& [w, field] : what) {
    bool lost = false;
    auto t = cached_time(w, *spec, *dtype, shape, req, lost);
    if (t) *field = *t;
    else v.notes.push_back(t.error().message);
    v.context_lost = v.context_lost || lost;
  }
  const double measured = cublas ? v.cublas_us : v.reference_us;
  v.baseline_us = req.baseline_us.value_or(measured);
  v.baseline_source = req.baseline_us ? "config" : measured <= 0 ? "unavailable" : cublas ? "cuBLAS" : "reference kernel";
  v.speedup = v.baseline_us > 0 ? v.baseline_us / timing->median_us : 0;
  v.stages.push_back({"benchmark", true, since(tb),
                      std::to_string(timing->samples) + " timed launches on fresh inputs, L2 flushed before each, " +
                          std::to_string(plan.checked_launches) + " of them checked" +
                          (timed.size() == 2 ? " (as many of the best's)" : "") +
                          (v.paired.pairs ? ", paired with the current best" : "")});
  v.correctness = Correctness::Pass;
  v.message = "passed all five stages";
  if (!req.counters) {
    v.counters = HardwareCounters::unavailable_because("turned off in the config ([harness] counters = false)");
  } else if (v.context_lost) {
    v.counters = HardwareCounters::unavailable_because("not read: the worker's CUDA context was lost timing the baseline");
  } else {
    if (on_settled) {
      Verdict settled = v;
      settled.total_seconds = since(t0);
      on_settled(settled);
    }
    if (on_stage) on_stage("counters");
    const auto tk = std::chrono::steady_clock::now();
    bool lost = false;
    v.counters = counters_pass(*gpu_, *inputs_, *checks_,
                               {*spec, shape, *dtype, *cand, (*ref)->validate, mix_seed(seeds->timing_inputs ^ 0xc0c0)}, lost);
    v.counters->seconds = since(tk);
    v.context_lost = v.context_lost || lost;
  }
  return finish(v, t0);
}

}  // namespace ak
