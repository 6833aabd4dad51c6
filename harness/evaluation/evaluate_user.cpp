// Harness::evaluate_user: a user type's candidate after its compile, judged by the type's
// reference process (harness/user_types/user_reference.hpp) as strictly as a built-in type's by its
// reference kernel: the five stages, the judged timing, the roofline, then the baseline, which is
// the module in PyTorch eager at the timed shape (and torch.compile beside it).
#include <chrono>

#include "harness/evaluation/evaluate.hpp"
#include "harness/judging/roofline.hpp"
#include "harness/user_types/user_stages.hpp"
#include "harness/user_types/user_timing.hpp"

namespace ak {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<UserReference*> Harness::user_reference(const UserTypeSpec& user) {
  auto it = user_references_.find(user.name);
  if (it != user_references_.end() && it->second->running()) return it->second.get();
  // One reference process at a time: each holds a CUDA context, its pool and PyTorch's cached
  // memory at its type's peak (tens of GB at KernelBench's sizes), so a run of several user types
  // would otherwise keep every one of them and run out of memory. A stopped one (after a failure)
  // is replaced by a fresh one too.
  user_references_.clear();
  auto started = UserReference::start(*gpu_, user);
  if (!started) return started.error();
  return user_references_.emplace(user.name, std::move(*started)).first->second.get();
}

Verdict Harness::evaluate_user(const EvalRequest& req, const KernelSpec& spec, const UserTypeSpec& user,
                               const LaunchableKernel& cand, const CompileOutput& compiled, DType dtype,
                               const Shape& shape, uint64_t timing_choices, Verdict v, const StageListener& on_stage) {
  auto ref = user_reference(user);
  if (!ref) {
    v.message = ref.error().message;
    v.harness_error = true;
    return v;
  }
  UserCaseRunner runner(*gpu_, *checks_, spec, cand, **ref);
  if (!run_user_stages(runner, spec, v, on_stage)) return v;

  if (on_stage) on_stage("benchmark");
  const auto tb = std::chrono::steady_clock::now();
  auto bench_fail = [&](const StageFailure& f, bool harness_error) {
    record_failure(f, "benchmark", v);
    v.failed_input = "get_inputs()";
    v.harness_error = harness_error;
    v.stages.push_back({"benchmark", false, since(tb), f.message});
    return v;
  };
  // The timed shape may be none the stages ran (a config's own): the candidate's plan must hold there.
  if (std::string why = cand.plan_problem(shape, dtype); !why.empty()) {
    StageFailure f;
    f.message = "the launch plan cannot run at the timed shape: " + why;
    f.at = {shape, dtype, Recipe::Normal, 0, 0};
    return bench_fail(f, false);
  }
  std::vector<const CompileOutput*> files{&compiled};
  if (!req.best_source.empty()) {
    if (auto best = best_compiled(spec, req.best_source, v.arch); best) files.push_back(*best);
    else v.notes.push_back("not paired with the current best (" + best.error().message + "): judged on its median alone");
  }
  auto modules = timing_modules(spec, files, timing_choices);
  if (!modules && files.size() == 2) {
    v.notes.push_back("not paired with the current best (" + modules.error().message + "): judged on its median alone");
    files.pop_back();
    modules = timing_modules(spec, files, timing_choices);
  }
  StageFailure f;
  f.at = {shape, dtype, Recipe::Normal, 0, 0};
  if (!modules) {
    f.message = modules.error().message;
    return bench_fail(f, false);
  }
  std::vector<const LaunchableKernel*> timed;
  for (auto& m : *modules) timed.push_back(&m);
  bool sticky = false;
  UserTimingPlan plan{{req.warmup, req.repetitions}, kCheckedLaunches, timing_choices};
  auto judged = user_timing(*gpu_, *checks_, spec, **ref, shape, dtype, timed, plan, sticky);
  if (!judged || judged->failures.at(0)) {
    if (judged) f = *judged->failures.at(0);
    else f.correctness = sticky ? Correctness::Crash : Correctness::Fail, f.message = judged.error().message;
    f.at = {shape, dtype, Recipe::Normal, 0, 0};
    f.context_lost = sticky;
    return bench_fail(f, !judged && judged.error().harness);
  }
  if (judged->failures.size() == 2 && judged->failures[1]) {
    judged->paired.best_failure = judged->failures[1]->message;
    v.notes.push_back("the current best failed its own checks beside this candidate: " + judged->failures[1]->message);
  }
  const Timing timing = judged->timings.at(0);
  v.kernelbench_pass = v.kernelbench_pass.value_or(true) && judged->kernelbench_pass;
  v.paired = judged->paired;
  v.peak_vram_mb = double(std::max(runner.peak_bytes(), judged->bytes)) / (1 << 20);
  if (!timing_on_roofline(v, spec, shape, dtype, timing, peaks_)) {
    v.stages.push_back({"benchmark", false, since(tb), v.message});
    return v;
  }
  // The baseline: PyTorch eager at the timed shape, once per shape and dtype. A failure here is
  // the harness's, said in the notes; the candidate still passed.
  const std::string key = std::string(req.torch_compile ? "eager+compile|" : "eager|") + spec.type + "|" + shape_str(shape) + "|" + dtype_name(dtype);
  if (!time_cache_.count(key)) {
    if (on_stage) on_stage("baseline");  // its own watchdog limit: torch.compile autotunes for minutes
    auto b = (*ref)->baseline(shape, dtype, std::max(10, req.repetitions / 4), req.torch_compile);
    if (b) {
      time_cache_[key] = b->eager_us;
      time_cache_["compile|" + key] = b->compile_us;
      if (!b->compile_error.empty()) v.notes.push_back(b->compile_error);
    } else {
      v.notes.push_back("timing the PyTorch baseline of " + spec.type + " failed: " + b.error().message);
    }
  }
  const double eager = time_cache_.count(key) ? time_cache_[key] : 0;
  v.reference_us = eager;
  v.torch_compile_us = time_cache_.count("compile|" + key) ? time_cache_["compile|" + key] : 0;
  v.baseline_us = req.baseline_us.value_or(eager);
  v.baseline_source = req.baseline_us ? "config" : eager <= 0 ? "unavailable" : "PyTorch eager";
  v.speedup = v.baseline_us > 0 ? v.baseline_us / timing.median_us : 0;
  v.stages.push_back({"benchmark", true, since(tb),
                      std::to_string(timing.samples) + " timed launches, each on fresh inputs from get_inputs(), L2 flushed before each, " +
                          std::to_string(plan.checked_launches) + " of them checked by the reference process" +
                          (timed.size() == 2 ? " (as many of the best's)" : "") +
                          (v.paired.pairs ? ", paired with the current best" : "")});
  v.correctness = Correctness::Pass;
  v.message = "passed all five stages";
  return v;
}

}  // namespace ak
