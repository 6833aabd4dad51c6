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
#include "common/format.hpp"
#include "common/untrusted_text.hpp"

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
  KernelProgress& k = kernels_[job.kernel];
  k.best_rejudging = false;
  const long long n = job.experiment;
  const double latency = v.timing ? v.timing->median_us : 0;
  ResultRow row{n, k.tag, k.spec->type, v.throughput, latency, v.pct_peak, v.speedup, correctness_name(v.correctness),
                v.peak_vram_mb, false, "", 0, clock_.now_s() - job.started_s, ""};
  const std::vector<ResultRow> chain = standing_bests(rows_, k.tag);
  if (job.best_version != k.best_version) {
    // Another GPU kept a newer best while this one was judged: demoting now would undo that keep.
    row.correctness = kBestReplaced;
    row.description = "the best judged again on its own (" + std::string(correctness_name(v.correctness)) +
                      "), but a newer best was kept meanwhile: nothing changes";
  } else if (v.passed()) {
    row.correctness = kBestJudgedAgain;
    k.best_spread = kept_spread(v);
    row.description = format_numbers("the best judged again on its own: %.2f us now, kept at %.2f us", latency, k.best_us);
  } else if (chain.size() < 2) {
    row.description = "the best judged again on its own fails, with no earlier best to go back to";
    row.failure = untrusted_line(v.message, kMessageBytes);
  } else {
    const ResultRow& back = chain[chain.size() - 2];
    auto source = read_file_text(dir_.path(dir_.experiment_file(back.experiment, k.tag)));
    if (!source)
      return error("demoting the best of " + k.tag + ": the file of experiment " + std::to_string(back.experiment) +
                   ", the best before it, cannot be read (" + source.error().message + "); the run folder is damaged");
    if (auto s = write_file_atomic(dir_.path(dir_.kernel_file(k.tag)), *source); !s) return s;
    const double failed_best_us = k.best_us;
    row = back;
    row.experiment = n;
    row.correctness = kBestDemoted;
    row.kept = true;
    row.llm_tokens = 0;
    row.seconds = clock_.now_s() - job.started_s;
    row.description = "the best judged again on its own fails: demoted; experiment " + std::to_string(back.experiment) +
                      " is the best again";
    row.failure = untrusted_line(v.message, kMessageBytes);
    row.move = MoveKind::Edit;
    auto sha = git_->commit_file(dir_.kernel_file(k.tag), commit_message(row, failed_best_us, v.throughput_unit));
    if (!sha) return sha.error();
    row.commit = *sha;
    push_history();
    k.best_version++;
    k.best_spread = 0;  // the earlier best's spread was not kept: the strictest allowance until judged again
  }
  if (auto s = record(row); !s) return s;
  if (auto s = ledger_->remove(n); !s) return s;
  spdlog::info("experiment {} {}: {} -> {}", n, k.tag, row.description, row.correctness);
  return ok();
}

}  // namespace ak
