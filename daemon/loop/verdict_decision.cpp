#include "daemon/loop/verdict_decision.hpp"

#include <algorithm>

#include "common/format.hpp"
#include "common/untrusted_text.hpp"

namespace ak {

bool faster_than_best(const Verdict& v, double best_us, double keep_threshold) {
  if (v.paired.pairs > 0) return v.paired.clears(keep_threshold);
  return v.timing && v.timing->median_us <= best_us * (1 - keep_threshold);
}

double kept_spread(const Verdict& v) {
  return v.timing ? std::clamp(v.timing->spread(), 0.0, kKeptSpreadCap) : 0.0;
}

std::string best_out_of_line(const Verdict& v, double kept_us, double kept_spread) {
  if (v.paired.pairs == 0) return "";
  if (!v.paired.best_failure.empty()) return "the best failed its own checks beside it (" + v.paired.best_failure + ")";
  const double allowed = kept_us * (1 + kBestSlowdownAllowance + kept_spread);
  if (kept_us > 0 && v.paired.best_us > allowed)
    return format_numbers("the best ran %.2f us beside it, %.0f%% slower than the %.2f us it was kept at", v.paired.best_us,
                          (v.paired.best_us / kept_us - 1) * 100, kept_us);
  if (v.paired.best_spread > kept_spread + kBestNoiseAllowance)
    return format_numbers("the best's launches spread %.1f%% beside it, against %.1f%% when it was kept", v.paired.best_spread * 100,
                          kept_spread * 100);
  return "";
}

namespace {

double median_us(const Verdict& v) { return v.timing ? v.timing->median_us : 0; }

/// A baseline's row says what its speedups are measured against: what the user runs today (their
/// baseline_us, cuBLAS for a GEMM, or for a user type its module in PyTorch eager); else the
/// starter itself, since the harness's plain reference kernels are slower than the starters and a
/// "2x" over them would mean nothing (docs/design.md).
void describe_baseline(ResultRow& row, const Verdict& v, const KernelProgress& k, const Proposal& proposal, bool keep) {
  const bool library = v.baseline_source == "cuBLAS" || v.baseline_source == "PyTorch eager";
  const bool starter = !k.entry->baseline_us && !library;
  if (starter && v.passed()) row.speedup = 1.0;
  const char* first = k.llm_writes_first ? "the starter (the LLM's first passing file)" : "the starter";
  row.description = baseline_description(k.entry->baseline_us ? "baseline_us in the config" : starter ? first : v.baseline_source);
  // A first file of the LLM that fails is one try of a few, and keeps the LLM's own words.
  if (k.llm_writes_first && !keep) row.description = "first file, not passing: " + proposal.description;
}

}  // namespace

CandidateDecision decide_candidate(const ExperimentJob& job, const Verdict& v, const KernelProgress& k,
                                   double keep_threshold) {
  CandidateDecision d;
  const bool baseline = job.baseline;
  const Proposal& proposal = job.proposal;
  // Paired with a best that was replaced while it ran: its ratio says nothing about the new one,
  // which is measured against another file's time.
  d.stale = !baseline && job.best_version != k.best_version;
  if (d.stale && v.passed() && v.paired.pairs > 0 && faster_than_best(v, k.best_us, keep_threshold)) {
    d.judge_again = true;
    return d;
  }
  d.doubt = baseline || !v.passed() || d.stale ? "" : best_out_of_line(v, k.best_us, k.best_spread);
  d.keep = v.passed() && d.doubt.empty() && (baseline || faster_than_best(v, k.best_us, keep_threshold));
  d.judge_again_noisy = !d.keep && !baseline && !d.stale && v.passed() && d.doubt.empty() && v.paired.pairs > 0 &&
                        v.paired.ratio < 1 - keep_threshold && job.noisy_rejudges == 0;
  if (d.judge_again_noisy) return d;
  d.previous_best_us = baseline ? 0 : k.best_us;

  ResultRow& row = d.row;
  row = ResultRow{job.experiment, k.tag, k.spec->type, v.throughput, median_us(v), v.pct_peak, v.speedup,
                  correctness_name(v.correctness), v.peak_vram_mb, d.keep, "", proposal.tokens, 0, proposal.description};
  row.move = baseline ? MoveKind::Baseline : proposal.move;
  if (baseline) describe_baseline(row, v, k, proposal, d.keep);
  row.paired_best_us = v.paired.best_us;
  row.paired_ratio = v.paired.ratio;
  row.paired_noise = v.paired.noise;
  row.predicted_us = proposal.predicted_us;
  // The harness's message can quote the compiler, which quotes the candidate: outside text.
  if (!v.passed()) row.failure = untrusted_line(v.message, kMessageBytes);
  if (!d.doubt.empty())
    row.failure = untrusted_line("not kept: " + d.doubt + "; the best is judged again on its own", kMessageBytes);
  return d;
}

BestRejudgementDecision decide_best_rejudgement(const ExperimentJob& job, const Verdict& v, const KernelProgress& k,
                                                const std::vector<ResultRow>& standing) {
  using Outcome = BestRejudgementDecision::Outcome;
  BestRejudgementDecision d;
  const double latency = median_us(v);
  ResultRow& row = d.row;
  row = ResultRow{job.experiment, k.tag, k.spec->type, v.throughput, latency, v.pct_peak, v.speedup,
                  correctness_name(v.correctness), v.peak_vram_mb, false, "", 0, 0, ""};
  if (job.best_version != k.best_version) {
    // Another GPU kept a newer best while this one was judged: demoting now would undo that keep.
    d.outcome = Outcome::Replaced;
    row.correctness = kBestReplaced;
    row.description = "the best judged again on its own (" + std::string(correctness_name(v.correctness)) +
                      "), but a newer best was kept meanwhile: nothing changes";
  } else if (v.passed()) {
    d.outcome = Outcome::StillPasses;
    row.correctness = kBestJudgedAgain;
    row.description = format_numbers("the best judged again on its own: %.2f us now, kept at %.2f us", latency, k.best_us);
  } else if (standing.size() < 2) {
    d.outcome = Outcome::FailsAlone;
    row.description = "the best judged again on its own fails, with no earlier best to go back to";
    row.failure = untrusted_line(v.message, kMessageBytes);
  } else {
    d.outcome = Outcome::Demoted;
    const ResultRow& back = standing[standing.size() - 2];
    d.back_to = back.experiment;
    row = back;
    row.experiment = job.experiment;
    row.correctness = kBestDemoted;
    row.kept = true;
    row.llm_tokens = 0;
    row.seconds = 0;
    row.commit = "";
    row.description = "the best judged again on its own fails: demoted; experiment " + std::to_string(back.experiment) +
                      " is the best again";
    row.failure = untrusted_line(v.message, kMessageBytes);
    row.move = MoveKind::Edit;
  }
  return d;
}

}  // namespace ak
