#include "harness/evaluation/evaluate.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "harness/compile/candidate_compile.hpp"
#include "harness/evaluation/evaluation_decisions.hpp"
#include "harness/gpu/driver_call_times.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Verdict finish(Verdict v, std::chrono::steady_clock::time_point t0) {
  v.total_seconds = since(t0);
  return v;
}

}  // namespace

void to_json(nlohmann::json& j, const EvalRequest& r) {
  j = {{"kernel_type", r.kernel_type}, {"source", r.source}, {"dtype", r.dtype}, {"shape", r.shape},
       {"arch", r.arch}, {"seed", r.seed}, {"time_starter", r.time_starter}, {"warmup", r.warmup},
       {"repetitions", r.repetitions}, {"best_source", r.best_source}, {"counters", r.counters},
       {"counters_for_all", r.counters_for_all}, {"shared_compiles", r.shared_compiles}};
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
  r.counters_for_all = j.value("counters_for_all", false);
  r.shared_compiles = j.value("shared_compiles", "");
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

Result<const CompileOutput*> Harness::best_compiled(const KernelSpec& spec, const std::string& source,
                                                    const std::string& arch, const SharedCompiles& shared) {
  return bests_.find(spec.type, arch, source, [&]() -> Result<CompileOutput> {
    const std::string file = spec.type + ".cu";
    const CompileRequest request = candidate_request(spec, source, file, arch);
    if (auto left = timed_call("benchmark: the best found in the shared compiles", [&] { return shared.load(request); }))
      return std::move(*left);
    TimedCall timed("benchmark: the best compiled");
    auto compiled = compile_candidate(spec, source, file, arch);
    if (!compiled) return compiled.error();
    if (!compiled->ok) return error("the current best does not compile any more: " + compiled->message);
    if (auto kept = shared.save(request, compiled->output); !kept)
      spdlog::warn("{} (each worker compiles the bests it times beside)", kept.error().message);
    return std::move(compiled->output);
  });
}

void Harness::share_compile(const EvalRequest& req, const Job& job, const CompileOutput& candidate, Verdict& v) {
  if (req.shared_compiles.empty() || (v.paired.pairs > 0 && v.paired.ratio >= 1)) return;
  const SharedCompiles shared(req.shared_compiles);
  auto kept = shared.save(candidate_request(*job.spec, req.source, job.spec->type + ".cu", v.arch), candidate);
  if (!kept) v.notes.push_back(kept.error().message + ": the workers that time beside this file compile it again");
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

Result<std::vector<LaunchableKernel>> Harness::files_to_time(const EvalRequest& req, const Job& job,
                                                             const CompileOutput& candidate, Verdict& v) {
  std::vector<const CompileOutput*> files{&candidate};
  if (!req.best_source.empty()) {
    if (auto best = best_compiled(*job.spec, req.best_source, v.arch, SharedCompiles(req.shared_compiles)); best)
      files.push_back(*best);
    else v.notes.push_back("not paired with the current best (" + best.error().message + "): judged on its median alone");
  }
  auto modules = timing_modules(*job.spec, files, job.seeds.timing_choices);
  if (!modules && files.size() == 2) {
    v.notes.push_back("not paired with the current best (" + modules.error().message + "): judged on its median alone");
    files.pop_back();
    modules = timing_modules(*job.spec, files, job.seeds.timing_choices);
  }
  return modules;
}

std::optional<Harness::Job> Harness::read_request(const EvalRequest& req, Verdict& v) {
  auto seeds = req.seed ? Result<EvaluationSeeds>(EvaluationSeeds::from(req.seed)) : EvaluationSeeds::fresh();
  if (!seeds) {
    v.message = seeds.error().message;
    return std::nullopt;
  }
  record_seeds(v, *seeds, req.seed);
  if (auto s = register_request_type(req); !s) {
    v.message = s.error().message;
    v.harness_error = true;
    return std::nullopt;
  }
  auto file_spec = spec_for_file(req.kernel_type, req.source);
  auto dtype = parse_dtype(req.dtype);
  if (!file_spec || !dtype) {
    refuse_request(v, !file_spec ? file_spec.error().message : "unknown dtype '" + req.dtype + "'",
                   !file_spec && find_spec(req.kernel_type));
    return std::nullopt;
  }
  Job job{*file_spec, *dtype, req.shape.empty() ? (*file_spec)->bench_shape : req.shape, *seeds, {}};
  v.dtype = dtype_name(job.dtype);
  v.shape = shape_str(job.shape);
  if (std::string why = contract_mismatch(*job.spec, req.best_source, job.shape); !why.empty()) {
    refuse_request(v, why, true);
    return std::nullopt;
  }
  return job;
}

std::optional<Harness::CompiledCandidate> Harness::compile_step(const EvalRequest& req, const Job& job, Verdict& v,
                                                                const StageListener& on_stage) {
  if (on_stage) on_stage("compile");
  const auto tc = std::chrono::steady_clock::now();
  auto compiled = compile_candidate(*job.spec, req.source, job.spec->type + ".cu", v.arch);
  if (!compiled || !compiled->ok) {
    fail_compile(v, compiled ? compiled->message : compiled.error().message, compiled ? compiled->output.log : "",
                 since(tc));
    return std::nullopt;
  }
  record_compile_statistics(v, job.spec->dtypes, compiled->output.functions, job.dtype);
  scratch_cap_bytes_ = req.scratch_cap_mib << 20;
  auto cand = LaunchableKernel::candidate(*gpu_, *job.spec, compiled->output, scratch_cap_bytes_);
  if (!cand) {
    fail_compile(v, "the compiled module cannot be used: " + cand.error().message, compiled->output.log, since(tc));
    return std::nullopt;
  }
  if (v.registers < 0) record_driver_statistics(v, cand->attributes(job.dtype));  // no ptxas statistics in the log
  v.block_threads = cand->block_threads();
  v.rows_per_block = cand->rows_per_block();
  v.stages.push_back({"compile", true, since(tc), std::to_string(v.registers) + " registers, " +
                                                      std::to_string(v.spill_bytes) + " bytes spilled"});
  return CompiledCandidate{std::move(compiled->output), std::move(*cand)};
}

bool Harness::counters_skipped_for(const EvalRequest& req, Verdict& v) {
  auto why = counters_skipped(req.counters, v.context_lost, v.paired, req.counters_for_all);
  if (why) v.counters = HardwareCounters::unavailable_because(*why);
  return why.has_value();
}

void Harness::read_counters(const EvalRequest& req, const Job& job, const CompiledCandidate& cand,
                            CountersPassOperands& operands, Verdict& v, const StageListener& on_stage,
                            const VerdictListener& on_settled) {
  if (on_settled) {
    Verdict settled = v;
    settled.total_seconds = since(job.started);
    on_settled(settled);
  }
  if (on_stage) on_stage("counters");
  bool lost = false;
  v.counters = counters_pass(*gpu_, *checks_, {*job.spec, job.shape, job.dtype, cand.kernel}, operands, lost);
  v.context_lost = v.context_lost || lost;
}

Verdict Harness::evaluate(const EvalRequest& req, const StageListener& on_stage, const VerdictListener& on_settled) {
  const auto t0 = std::chrono::steady_clock::now();
  Verdict v;
  v.kernel_type = req.kernel_type;
  v.gpu = gpu_->info().name;
  v.arch = req.arch.empty() ? gpu_->info().arch : req.arch;
  std::optional<Job> job = read_request(req, v);
  if (!job) return finish(v, t0);
  job->started = t0;
  std::optional<CompiledCandidate> cand = compile_step(req, *job, v, on_stage);
  if (!cand) return finish(v, t0);
  if (const UserTypeSpec* user = find_user_type(job->spec->type))
    return finish(evaluate_user(req, *job, *user, *cand, v, on_stage, on_settled), t0);
  return finish(evaluate_builtin(req, *job, *cand, v, on_stage, on_settled), t0);
}

}  // namespace ak
