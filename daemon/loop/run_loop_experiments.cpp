// The experiments of the loop (daemon/loop/run_loop.hpp): handing work to free GPUs, and the
// keep/revert decision on each one that finishes, on the loop's thread, in order of completion.
#include "daemon/loop/run_loop.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"
#include "common/format.hpp"
#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"
#include "daemon/loop/scheduler.hpp"
#include "daemon/proposers/bottleneck.hpp"
#include "daemon/run_folder/counters_table.hpp"

namespace ak {
namespace {

/// The counters table's row of a verdict that carried counters, with what they say limits it.
CountersRow counters_row(long long n, const std::string& tag, const Verdict& v) {
  CountersRow row{n, tag, v.registers, v.spill_bytes, *v.counters, ""};
  if (row.counters.available()) row.bottleneck = limit_name(diagnose(row.counters, row.registers, row.spill_bytes).limit);
  return row;
}

}  // namespace

std::string RunLoop::gpu_model_filter(size_t w) const {
  // Only a mixed box holds kernels to a model: elsewhere every GPU may take every kernel.
  if (cfg_.gpu.mixed_models != "per-kernel") return "";
  for (auto& g : gpus_)
    if (g.model != gpus_[w].model) return gpus_[w].model;
  return "";
}

GpuState RunLoop::judging_state(const ExperimentJob& job) const {
  if (job.rejudge_best || job.judged_before()) return GpuState::JudgedAgain;
  if (job.propose_on_thread) return GpuState::Proposing;
  return job.baseline ? GpuState::Starter : GpuState::Candidate;
}

void RunLoop::idle_free_gpus(GpuState why) {
  const double now = clock_.now_s();
  for (size_t w = 0; w < gpus_.size(); ++w)
    if (!threads_[w].joinable() && gpu_time_.state(w) != why) gpu_time_.set(w, why, now);
}

std::string RunLoop::doing_line(const ExperimentJob& job, const std::string& what) const {
  return "experiment " + std::to_string(job.experiment) + " " + kernels_[job.kernel].tag + ": " + what;
}

Status RunLoop::dispatch_free_gpus() {
  // Candidates left in flight by the last stop go first, each on its kernel's model.
  while (!to_rerun_.empty()) {
    const InFlight e = to_rerun_.front();
    size_t k = 0;
    while (k < kernels_.size() && kernels_[k].tag != e.tag) ++k;
    std::optional<size_t> w;
    for (size_t g = 0; g < gpus_.size() && !w; ++g)
      if (!threads_[g].joinable() && (gpu_model_filter(g).empty() || kernels_[k].model.empty() || kernels_[k].model == gpus_[g].model))
        w = g;
    if (!w) return ok();
    to_rerun_.erase(to_rerun_.begin());
    ExperimentJob job = new_job(k, *w, e.experiment, !kernels_[k].has_baseline);
    job.proposal.source = read_file_text(job.candidate_path).value_or("");
    job.proposal.description = e.description.empty() ? "(proposed before a restart)" : e.description;
    job.proposal.move = e.structure_move ? MoveKind::Structure : MoveKind::Edit;
    job.proposal.tokens = e.tokens;
    job.proposal.cost_usd = e.cost_usd;
    job.proposal.predicted_us = e.predicted_us;
    job.request.source = job.proposal.source;
    if (auto s = start(std::move(job), e.description); !s) return s;
  }
  if (auto s = dispatch_best_rejudgements(); !s) return s;
  for (size_t w = 0; w < gpus_.size(); ++w) {
    while (!threads_[w].joinable()) {
      if (stop_requested() || budget_spent(true)) return idle_free_gpus(GpuState::Ending), ok();
      Pick pick = pick_next(kernels_, cfg_.convergence, gpu_model_filter(w));
      if (pick.index < 0) {
        gpu_time_.set(w, pick.waits_for_flight ? GpuState::NoOpenKernel : GpuState::Ending, clock_.now_s());
        break;
      }
      if (busy_gpus() == 0) spdlog::info("next: {}", pick.reason);
      else spdlog::info("next, on GPU {}: {}", gpus_[w].device, pick.reason);
      auto started = dispatch(size_t(pick.index), w);
      if (!started) return started.error();
      if (!*started && proposing_ >= proposer_.concurrency() && proposer_.concurrency() > 0)
        return idle_free_gpus(GpuState::LlmLimit), ok();
    }
  }
  return ok();
}

ExperimentJob RunLoop::new_job(size_t k, size_t w, long long n, bool baseline) {
  const KernelProgress& kp = kernels_[k];
  ExperimentJob job;
  job.experiment = n;
  job.kernel = k;
  job.worker = w;
  job.baseline = baseline;
  job.candidate_path = dir_.path(dir_.experiment_file(n, kp.tag));
  job.best_version = kp.best_version;
  job.started_s = clock_.now_s();
  EvalRequest& req = job.request;
  req.kernel_type = kp.spec->type;
  if (kp.entry->user_type) req.user_type = kp.entry->user_type->to_json();  // the worker reads no user file
  req.dtype = kp.entry->dtype;
  req.shape = kp.entry->shape;
  req.arch = cfg_.gpu.arch == "auto" ? "" : cfg_.gpu.arch;
  req.baseline_us = baseline ? kp.entry->baseline_us : std::optional<double>(kp.baseline_us);
  req.time_starter = false;
  if (!baseline) req.best_source = read_file_text(dir_.path(dir_.kernel_file(kp.tag))).value_or("");
  req.warmup = cfg_.harness.warmup;
  req.repetitions = cfg_.harness.repetitions;
  req.torch_compile = cfg_.harness.torch_compile;
  req.scratch_cap_mib = uint64_t(cfg_.harness.scratch_cap_mib);
  req.counters = cfg_.harness.counters;
  req.counters_for_all = cfg_.harness.counters_for_all;
  req.shared_compiles = dir_.compiled();
  return job;
}

Result<bool> RunLoop::dispatch(size_t k, size_t w) {
  KernelProgress& kp = kernels_[k];
  const bool baseline = !kp.has_baseline;
  // A kernel with no starter file gets its first file from the proposer, as an edit would come.
  if (baseline && !kp.llm_writes_first) {
    ExperimentJob job = new_job(k, w, next_experiment_++, true);
    job.proposal.source = kp.entry->user_type ? kp.entry->user_type->starter_source : kp.spec->starter_source();
    job.proposal.description = "baseline: the starter";  // completed once the verdict says against what
    job.request.source = job.proposal.source;
    if (!gpu_model_filter(w).empty()) kp.model = gpus_[w].model;
    if (auto s = start(std::move(job), "baseline: the starter"); !s) return s.error();
    return true;
  }
  if (proposer_.concurrency() > 0) {
    if (proposing_ >= proposer_.concurrency()) return false;
    ExperimentJob job = new_job(k, w, next_experiment_, baseline);
    job.context = context(k);
    next_experiment_++;
    job.propose_on_thread = true;
    ++proposing_;
    if (auto s = start(std::move(job), ""); !s) return s.error();
    return true;
  }
  auto p = proposer_.propose(context(k));
  if (!p && proposer_.must_stop()) return error(*proposer_.must_stop());
  if (!p) {
    ExperimentJob job = new_job(k, w, next_experiment_++, baseline);
    if (auto s = record_no_proposal(job, p.error().message); !s) return s.error();
    return true;
  }
  if (!*p) {
    // Nothing new beside what is in flight: wait for those; with none, this kernel is done.
    if (kp.in_flight > 0) kp.waiting = true;
    else {
      kp.proposer_exhausted = true;
      spdlog::info("{}: the proposer has nothing left to try; it is converged", kp.tag);
    }
    return false;
  }
  ExperimentJob job = new_job(k, w, next_experiment_++, baseline);
  job.proposal = **p;
  keep_model_notes(k, job.proposal);
  job.request.source = job.proposal.source;
  if (auto s = write_file_atomic(job.candidate_path, job.proposal.source); !s) return s.error();
  const std::string description = job.proposal.description;
  if (auto s = start(std::move(job), description); !s) return s.error();
  return true;
}

Status RunLoop::start(ExperimentJob job, const std::string& description) {
  KernelProgress& kp = kernels_[job.kernel];
  if (job.baseline)
    if (auto s = write_file_atomic(job.candidate_path, job.proposal.source); !s) return s;
  InFlight entry{job.experiment, kp.tag, gpus_[job.worker].device, description, job.proposal.tokens,
                 job.proposal.cost_usd, job.started_s, job.proposal.move == MoveKind::Structure, job.proposal.predicted_us};
  if (!job.judged_before())   // its ledger entry is there since its first look
    if (auto s = ledger_->add(entry); !s) return s;
  at("dispatched");
  kp.in_flight++;
  doing_[job.worker] = doing_line(job, description.empty() ? "waiting for the LLM's proposal" : description) +
                       (job.times_judged ? " (judged again beside the newer best)" : "") +
                       (job.noisy_rejudges ? " (judged again with more launches)" : "");
  const size_t w = job.worker;
  gpu_time_.set(w, judging_state(job), clock_.now_s());
  running_[job.experiment] = job;
  write_state("running");
  Evaluator& ev = *gpus_[w].evaluator;
  threads_[w] = std::thread([this, &ev, job = std::move(job)]() mutable { run_job(std::move(job), proposer_, ev, finished_, clock_); });
  return ok();
}

Status RunLoop::record_no_proposal(const ExperimentJob& job, const std::string& why) {
  const KernelProgress& kp = kernels_[job.kernel];
  ResultRow row{job.experiment, kp.tag, kp.spec->type, 0, 0, 0, 0, "NO_PROPOSAL", 0, false, "", 0,
                clock_.now_s() - job.started_s, "no usable proposal"};
  row.failure = untrusted_line(why, kMessageBytes);
  spdlog::warn("experiment {} {}: {}: {}", job.experiment, kp.tag, row.description, row.failure);
  return record(row);
}

Status RunLoop::record_error(const ExperimentJob& job, const std::string& why) {
  const KernelProgress& kp = kernels_[job.kernel];
  ResultRow row{job.experiment, kp.tag, kp.spec->type, 0, 0, 0, 0, "ERROR", 0, false, "", job.proposal.tokens,
                clock_.now_s() - job.started_s, job.proposal.description};
  row.move = job.baseline ? MoveKind::Baseline : job.proposal.move;
  row.failure = untrusted_line(why, kMessageBytes);
  spdlog::error("experiment {} {}: {}; recorded as ERROR, the run goes on", job.experiment, kp.tag, row.failure);
  if (auto s = record(row); !s) return s;
  return ledger_->remove(job.experiment);
}

Status RunLoop::finish_guarded(FinishedJob f) {
  const ExperimentJob job = f.job;
  try {
    return finish(std::move(f));
  } catch (const std::exception& e) {
    return record_error(job, std::string("the daemon failed on its verdict: ") + e.what());
  }
}

Status RunLoop::start_beside_best(ExperimentJob job) {
  const KernelProgress& kp = kernels_[job.kernel];
  job.best_version = kp.best_version;
  job.request.best_source = read_file_text(dir_.path(dir_.kernel_file(kp.tag))).value_or("");
  job.propose_on_thread = false;
  const std::string description = job.proposal.description;
  return start(std::move(job), description);
}

Status RunLoop::judge_again(ExperimentJob job) {
  job.times_judged++;
  spdlog::info("experiment {} {}: faster than the best it was paired with, but a newer best was kept meanwhile: "
               "judging it again beside that one", job.experiment, kernels_[job.kernel].tag);
  return start_beside_best(std::move(job));
}

Status RunLoop::judge_again_noisy(ExperimentJob job, const Verdict& v) {
  job.noisy_rejudges++;
  job.request.repetitions *= kNoisyRepetitionsFactor;
  spdlog::info("experiment {} {}: {:.1f}% faster than the best by its ratio, but its noise is {:.1f}%: judging it again "
               "with {} timed launches", job.experiment, kernels_[job.kernel].tag, (1 - v.paired.ratio) * 100,
               v.paired.noise * 100, job.request.repetitions);
  return start_beside_best(std::move(job));
}

namespace {
/// Times a candidate is judged again after the harness failed on it: a reference process that
/// died once is started afresh by the worker; one that fails three times will fail again.
constexpr int kHarnessRetries = 2;
}  // namespace

Status RunLoop::harness_failed(ExperimentJob job, const Verdict& v) {
  KernelProgress& k = kernels_[job.kernel];
  const std::string message = untrusted_line(v.message, kMessageBytes);
  if (job.harness_retries < kHarnessRetries && !stop_requested()) {
    job.harness_retries++;
    job.propose_on_thread = false;
    spdlog::warn("experiment {} {}: the harness failed, not the candidate ({}): judging it again ({} of {})", job.experiment,
                 k.tag, message, job.harness_retries, kHarnessRetries);
    const std::string description = job.proposal.description;
    return start(std::move(job), description);
  }
  if (job.rejudge_best) k.best_rejudging = false;
  (void)write_file_atomic(dir_.path(verdict_file(job.experiment, k.tag)), json_dump(nlohmann::json(v), 2) + "\n");
  ResultRow row{job.experiment, k.tag, k.spec->type, 0, 0, 0, 0, kHarnessError, 0, false, "", job.proposal.tokens,
                clock_.now_s() - job.started_s, job.rejudge_best ? "the best judged again on its own" : job.proposal.description};
  row.move = job.baseline ? MoveKind::Baseline : job.proposal.move;
  row.failure = untrusted_line("the harness, not the candidate: " + message, kMessageBytes);
  cost_usd_ += job.proposal.cost_usd;
  k.harness_failure = message;
  spdlog::error("experiment {} {}: the harness could not judge it in {} tries: {}; recorded as {}, not as a revert",
                job.experiment, k.tag, job.harness_retries + 1, message, kHarnessError);
  if (auto s = record(row); !s) return s;
  return ledger_->remove(job.experiment);
}

void RunLoop::keep_model_notes(size_t k, const Proposal& p) {
  ModelNotes& notes = notes_[kernels_[k].tag];
  if (!p.keeps_notes || (!p.scratchpad && p.show_variant == notes.show_variant)) return;
  if (p.scratchpad) notes.scratchpad = *p.scratchpad;
  notes.show_variant = p.show_variant;   // shown in the next prompt only, unless asked again
  if (auto s = write_model_notes(dir_.root(), kernels_[k].tag, notes); !s)
    spdlog::warn("{}: the model's notes stay in memory only: {}", kernels_[k].tag, s.error().message);
}

Status RunLoop::proposal_arrived(const ExperimentJob& job) {
  --proposing_;
  gpu_time_.set(job.worker, job.baseline ? GpuState::Starter : GpuState::Candidate, clock_.now_s());
  keep_model_notes(job.kernel, job.proposal);
  running_[job.experiment] = job;
  doing_[job.worker] = doing_line(job, job.proposal.description);
  for (auto e : ledger_->entries())
    if (e.experiment == job.experiment) {
      e.description = job.proposal.description;
      e.structure_move = job.proposal.move == MoveKind::Structure;
      e.tokens = job.proposal.tokens;
      e.cost_usd = job.proposal.cost_usd;
      e.predicted_us = job.proposal.predicted_us;
      return ledger_->update(e);
    }
  return ok();
}

Status RunLoop::finish(FinishedJob f) {
  ExperimentJob& job = f.job;
  KernelProgress& k = kernels_[job.kernel];
  const long long n = job.experiment;
  running_.erase(n);
  doing_.erase(job.worker);
  k.in_flight--;
  k.waiting = false;
  if (job.propose_on_thread && (f.no_proposal || f.nothing_to_propose)) --proposing_;
  if (f.nothing_to_propose) {
    spdlog::info("experiment {} {}: the proposer had nothing new; the number stays unused", n, k.tag);
    if (k.in_flight == 0) k.proposer_exhausted = true;
    else k.waiting = true;   // until one of those in flight finishes
    return ledger_->remove(n);
  }
  if (f.no_proposal) {
    if (stop_requested()) return ok();   // asked again after the restart
    if (proposer_.must_stop()) return error(*proposer_.must_stop());
    if (auto s = record_no_proposal(job, *f.no_proposal); !s) return s;
    return ledger_->remove(n);
  }
  if (f.thrown) return record_error(job, "it failed while being judged: " + *f.thrown);
  if (f.eval_failure) {
    if (stop_requested()) return ok();   // abandoned by the stop: the ledger runs it again at the next start
    return error("experiment " + std::to_string(n) + " (" + k.tag + ") on GPU " + std::to_string(gpus_[job.worker].device) +
                 ": " + *f.eval_failure);
  }
  at("evaluated");
  const Verdict& v = *f.verdict;
  if (v.harness_error) return harness_failed(std::move(job), v);
  keep_verdict(n, k.tag, v);
  if (job.rejudge_best) return finish_best_rejudgement(job, v);
  return finish_candidate(std::move(job), v);
}

void RunLoop::keep_verdict(long long n, const std::string& tag, const Verdict& v) {
  // The whole verdict beside the candidate: the compile log and the worst element, for the
  // proposer's next prompt and for a person reading the run (a best judged again has one too:
  // its row may carry the verdict's correctness, and the report reads every judged row's).
  (void)write_file_atomic(dir_.path(verdict_file(n, tag)), json_dump(nlohmann::json(v), 2) + "\n");
  if (v.counters)   // a table to plot from; the verdict file keeps them whole
    if (auto s = append_counters(counters_table_path(dir_.root()), counters_row(n, tag, v)); !s)
      spdlog::warn("experiment {} {}: its counters are in its verdict file only: {}", n, tag, s.error().message);
}

Status RunLoop::finish_candidate(ExperimentJob job, const Verdict& v) {
  KernelProgress& k = kernels_[job.kernel];
  if (!v.gpu.empty()) k.gpu = v.gpu, k.arch = v.arch;
  if (v.peak_used > 0) k.peak = v.peak_used, k.unit = v.throughput_unit;
  CandidateDecision d = decide_candidate(job, v, k, cfg_.convergence.keep_threshold);
  if (d.stale) stale_.count++;
  if (d.judge_again) return stale_.judged_again++, judge_again(std::move(job));
  if (d.judge_again_noisy) return noisy_judged_again_++, judge_again_noisy(std::move(job), v);
  cost_usd_ += job.proposal.cost_usd;
  ResultRow& row = d.row;
  if (!d.doubt.empty()) {
    spdlog::warn("experiment {} {}: {}: the best is judged again on its own before anything is kept beside it",
                 job.experiment, k.tag, row.failure);
    k.best_to_rejudge = true;
  }
  row.seconds = clock_.now_s() - job.started_s;
  if (d.keep) {
    auto sha = commit_best(k.tag, job.proposal.source, row, d.previous_best_us, v.throughput_unit);
    if (!sha) return sha.error();
    row.commit = *sha;
    at("committed");
    push_history();
    k.best_version++;
    k.best_spread = kept_spread(v);
  }
  if (auto s = record(row); !s) return s;
  if (auto s = ledger_->remove(job.experiment); !s) return s;
  log_candidate(job, v, d);
  return ok();
}

Result<std::string> RunLoop::commit_best(const std::string& tag, const std::string& source, const ResultRow& row,
                                         double previous_best_us, const std::string& unit) {
  if (auto s = write_file_atomic(dir_.path(dir_.kernel_file(tag)), source); !s) return s.error();
  return git_->commit_file(dir_.kernel_file(tag), commit_message(row, previous_best_us, unit));
}

void RunLoop::log_candidate(const ExperimentJob& job, const Verdict& v, const CandidateDecision& d) const {
  const KernelProgress& k = kernels_[job.kernel];
  const ResultRow& row = d.row;
  const std::string on_gpu = gpus_.size() > 1 ? " [GPU " + std::to_string(gpus_[job.worker].device) + "]" : "";
  const std::string& what = job.proposal.description;
  if (v.passed())
    spdlog::info("experiment {} {}{}: {}: PASS {:.2f} us ({:.0f} {}, {:.1f}% of peak, {:.2f}x) -> {}{}", row.experiment, k.tag,
                 on_gpu, what, row.latency_us, v.throughput, v.throughput_unit, v.pct_peak * 100, v.speedup,
                 d.keep ? "kept" : "reverted",
                 v.paired.pairs ? format_numbers(" (paired with the best: %.4fx +- %.4f)", v.paired.ratio, v.paired.noise)
                 : d.keep && !job.baseline ? format_numbers(" (%+.1f%%)", (row.latency_us / d.previous_best_us - 1) * 100) : "");
  else
    spdlog::info("experiment {} {}{}: {}: {} -> reverted: {}", row.experiment, k.tag, on_gpu, what, row.correctness,
                 untrusted_line(v.message, kMessageBytes));
  if (notifier_)
    notifier_->status("experiment " + std::to_string(row.experiment) + ", " + k.tag + ": best " +
                      format_numbers("%.2f us (%.2fx)", k.best_us, k.speedup()));
}

}  // namespace ak
