// The current best judged again (daemon/loop/run_loop.hpp). A best is timed beside every
// candidate, and its outputs there are checked as the candidate's are; when that pairing finds it
// failing, or slower than the time it was kept at by more than its noise, nothing is kept on that
// pairing and the best gets a verdict of its own: alone, all five stages and the judged timing.
// It passes: its time is what it takes now (a BEST_PASS row). It fails: it is demoted, and the
// best before it is the best again, its file committed back (a DEMOTED row, which carries that
// best's numbers, so that a restart recovers the same state from results.tsv alone).
#include "daemon/loop/run_loop.hpp"

#include <spdlog/spdlog.h>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"

namespace ak {

Status RunLoop::dispatch_best_rejudgements() {
  for (size_t k = 0; k < kernels_.size(); ++k) {
    KernelProgress& kp = kernels_[k];
    if (!kp.best_to_rejudge || kp.best_rejudging) continue;
    for (size_t w = 0; w < gpus_.size(); ++w) {
      if (threads_[w].joinable()) continue;
      if (!gpu_model_filter(w).empty() && !kp.model.empty() && kp.model != gpus_[w].model) continue;
      ExperimentJob job = new_job(k, w, next_experiment_++, false);
      job.rejudge_best = true;
      job.request.best_source.clear();
      job.request.source = job.proposal.source = read_file_text(dir_.path(dir_.kernel_file(kp.tag))).value_or("");
      job.proposal.description = "the best judged again on its own";
      if (auto s = write_file_atomic(job.candidate_path, job.proposal.source); !s) return s;
      kp.best_to_rejudge = false;
      kp.best_rejudging = true;
      spdlog::info("{}: judging the current best again on its own (experiment {})", kp.tag, job.experiment);
      const std::string description = job.proposal.description;
      if (auto s = start(std::move(job), description); !s) return s;
      break;
    }
  }
  return ok();
}

Status RunLoop::finish_best_rejudgement(const ExperimentJob& job, const Verdict& v) {
  using Outcome = BestRejudgementDecision::Outcome;
  KernelProgress& k = kernels_[job.kernel];
  k.best_rejudging = false;
  BestRejudgementDecision d = decide_best_rejudgement(job, v, k, standing_bests(rows_, k.tag));
  ResultRow& row = d.row;
  row.seconds = clock_.now_s() - job.started_s;
  if (d.outcome == Outcome::StillPasses) k.best_spread = kept_spread(v);
  if (d.outcome == Outcome::Demoted) {
    auto source = read_file_text(dir_.path(dir_.experiment_file(d.back_to, k.tag)));
    if (!source)
      return error("demoting the best of " + k.tag + ": the file of experiment " + std::to_string(d.back_to) +
                   ", the best before it, cannot be read (" + source.error().message + "); the run folder is damaged");
    auto sha = commit_best(k.tag, *source, row, k.best_us, v.throughput_unit);
    if (!sha) return sha.error();
    row.commit = *sha;
    push_history();
    k.best_version++;
    k.best_spread = 0;  // the earlier best's spread was not kept: the strictest allowance until judged again
  }
  if (auto s = record(row); !s) return s;
  if (auto s = ledger_->remove(job.experiment); !s) return s;
  spdlog::info("experiment {} {}: {} -> {}", job.experiment, k.tag, row.description, row.correctness);
  return ok();
}

}  // namespace ak
