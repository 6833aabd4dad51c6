// Harness::evaluate_user, the twin of Harness::evaluate_builtin (builtin_evaluation.cpp): a user
// type's candidate after its compile, judged by the type's reference process
// (harness/user_types/user_reference.hpp) as strictly as a built-in type's by its reference kernel:
// the five stages, the judged timing, the roofline, then the baseline, which is the module in
// PyTorch eager at the timed shape (and torch.compile beside it), then the counters pass.
#include <chrono>

#include "harness/evaluation/evaluate.hpp"
#include "harness/evaluation/evaluation_decisions.hpp"
#include "harness/judging/roofline.hpp"
#include "harness/user_types/user_counters_pass.hpp"
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

Verdict Harness::evaluate_user(const EvalRequest& req, const Job& job, const UserTypeSpec& user,
                               const CompiledCandidate& cand, Verdict v, const StageListener& on_stage,
                               const VerdictListener& on_settled) {
  auto ref = user_reference(user);
  if (!ref) {
    v.message = ref.error().message;
    v.harness_error = true;
    return v;
  }
  UserCaseRunner runner(*gpu_, *checks_, *job.spec, cand.kernel, **ref);
  if (!run_user_stages(runner, *job.spec, v, on_stage)) return v;
  if (!benchmark_user(req, job, cand, **ref, runner.peak_bytes(), v, on_stage)) return v;
  v.correctness = Correctness::Pass;
  v.message = "passed all five stages";
  if (counters_skipped_for(req, v)) return v;
  auto operands = user_counters_operands(**ref, job.shape, job.dtype);
  read_counters(req, job, cand, *operands, v, on_stage, on_settled);
  return v;
}

bool Harness::benchmark_user(const EvalRequest& req, const Job& job, const CompiledCandidate& cand, UserReference& ref,
                             size_t stages_peak_bytes, Verdict& v, const StageListener& on_stage) {
  if (on_stage) on_stage("benchmark");
  const auto tb = std::chrono::steady_clock::now();
  auto fail = [&](StageFailure f, bool harness_error) {
    f.at = {job.shape, job.dtype, Recipe::Normal, 0, 0};
    record_failure(f, "benchmark", v);
    v.failed_input = "get_inputs()";
    v.harness_error = harness_error;
    v.stages.push_back({"benchmark", false, since(tb), f.message});
    return false;
  };
  // The timed shape may be none the stages ran (a config's own): the candidate's plan must hold there.
  if (std::string why = cand.kernel.plan_problem(job.shape, job.dtype); !why.empty()) {
    StageFailure f;
    f.message = "the launch plan cannot run at the timed shape: " + why;
    return fail(f, false);
  }
  auto modules = files_to_time(req, job, cand.output, v);
  if (!modules) {
    StageFailure f;
    f.message = modules.error().message;
    return fail(f, false);
  }
  std::vector<const LaunchableKernel*> timed;
  for (auto& m : *modules) timed.push_back(&m);
  bool sticky = false;
  UserTimingPlan plan{{req.warmup, req.repetitions}, kCheckedLaunches, job.seeds.timing_choices};
  auto judged = user_timing(*gpu_, *checks_, *job.spec, ref, job.shape, job.dtype, timed, plan, sticky);
  if (!judged || judged->failures.at(0)) {
    StageFailure f = judged ? *judged->failures.at(0) : timing_error_failure(judged.error(), sticky);
    f.context_lost = sticky;
    return fail(f, !judged && judged.error().harness);
  }
  note_failing_best(judged->failures, judged->paired, v);
  const Timing timing = judged->timings.at(0);
  v.kernelbench_pass = v.kernelbench_pass.value_or(true) && judged->kernelbench_pass;
  v.paired = judged->paired;
  v.peak_vram_mb = double(std::max(stages_peak_bytes, judged->bytes)) / (1 << 20);
  if (!timing_on_roofline(v, *job.spec, job.shape, job.dtype, timing, peaks_)) {
    v.stages.push_back({"benchmark", false, since(tb), v.message});
    return false;
  }
  time_pytorch_baseline(req, job, ref, timing.median_us, v, on_stage);
  share_compile(req, job, cand.output, v);
  v.stages.push_back({"benchmark", true, since(tb),
                      std::to_string(timing.samples) +
                          " timed launches, each on fresh inputs from get_inputs(), L2 flushed before each, " +
                          std::to_string(plan.checked_launches) + " of them checked by the reference process" +
                          (timed.size() == 2 ? " (as many of the best's)" : "") +
                          (v.paired.pairs ? ", paired with the current best" : "")});
  return true;
}

void Harness::time_pytorch_baseline(const EvalRequest& req, const Job& job, UserReference& ref, double median_us,
                                    Verdict& v, const StageListener& on_stage) {
  const std::string key = std::string(req.torch_compile ? "eager+compile|" : "eager|") + job.spec->type + "|" +
                          shape_str(job.shape) + "|" + dtype_name(job.dtype);
  if (!time_cache_.count(key)) {
    if (on_stage) on_stage("baseline");  // its own watchdog limit: torch.compile autotunes for minutes
    auto b = ref.baseline(job.shape, job.dtype, std::max(10, req.repetitions / 4), req.torch_compile);
    if (b) {
      time_cache_[key] = b->eager_us;
      time_cache_["compile|" + key] = b->compile_us;
      if (!b->compile_error.empty()) v.notes.push_back(b->compile_error);
    } else {
      v.notes.push_back("timing the PyTorch baseline of " + job.spec->type + " failed: " + b.error().message);
    }
  }
  const double eager = time_cache_.count(key) ? time_cache_[key] : 0;
  v.reference_us = eager;
  v.torch_compile_us = time_cache_.count("compile|" + key) ? time_cache_["compile|" + key] : 0;
  settle_speedup(v, req.baseline_us, eager, "PyTorch eager", median_us);
}

}  // namespace ak
