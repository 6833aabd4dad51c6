// The keep/revert decision on a verdict, alone: no run folder, no git, no GPU, no clock.
#include <catch2/catch.hpp>

#include "daemon/loop/verdict_decision.hpp"
#include "kernels_cuda/registry.hpp"

using namespace ak;

namespace {

/// rmsnorm with a recorded best of 100 us (version 3), kept with a spread of 2%.
struct Kernel {
  KernelEntry entry{"rmsnorm", {4096, 4096}, "fp16"};
  KernelProgress progress;
  Kernel() {
    progress.tag = "rmsnorm";
    progress.entry = &entry;
    progress.spec = find_spec("rmsnorm");
    progress.has_baseline = true;
    progress.baseline_us = 150;
    progress.best_us = 100;
    progress.best_spread = 0.02;
    progress.best_version = 3;
  }
};

ExperimentJob edit(long long n, int best_version = 3) {
  ExperimentJob job;
  job.experiment = n;
  job.best_version = best_version;
  job.proposal.description = "AK_VEC 4 -> 8";
  job.proposal.tokens = 1200;
  job.proposal.predicted_us = 85;
  return job;
}

ExperimentJob baseline() {
  ExperimentJob job;
  job.experiment = 1;
  job.baseline = true;
  job.proposal.description = "baseline: the starter";
  return job;
}

/// A passing verdict at `us`, timed alone (no best beside it).
Verdict passing(double us) {
  Verdict v;
  v.correctness = Correctness::Pass;
  v.timing = Timing{100, us, us, us, us, us};
  v.throughput = 2000;
  v.speedup = 150 / us;
  return v;
}

/// A passing verdict paired with the best: candidate/best `ratio`, the best at `best_us` beside it.
Verdict paired(double ratio, double best_us = 100, double noise = 0.002) {
  Verdict v = passing(best_us * ratio);
  v.paired = {100, best_us, ratio, noise, 0.01, ""};
  return v;
}

Verdict failing(const std::string& message) {
  Verdict v;
  v.correctness = Correctness::Fail;
  v.message = message;
  return v;
}

}  // namespace

TEST_CASE("a best is out of line when it fails its own checks or runs slower than kept beyond its noise", "[loop][best]") {
  Verdict v;
  v.correctness = Correctness::Pass;
  v.paired = {100, 104, 0.9, 0.002, 0.02, ""};
  CHECK(best_out_of_line(v, 100, 0.02).empty());           // within 5% + its spread when kept
  v.paired.best_us = 140;
  CHECK_THAT(best_out_of_line(v, 100, 0.02), Catch::Contains("40% slower"));
  v.paired.best_us = 100;
  v.paired.best_failure = "wrong output during timing (timed launch 3 of 100)";
  CHECK_THAT(best_out_of_line(v, 100, 0.02), Catch::Contains("failed its own checks"));
  CHECK_FALSE(v.paired.clears(0.01));
  v.paired.pairs = 0;
  CHECK(best_out_of_line(v, 100, 0.02).empty());
}

TEST_CASE("a best that makes its own timing noisy when paired widens no allowance: it is judged again", "[loop][best]") {
  // Seen: a best whose launches spread 0.225 beside a candidate ran 1.07x its kept time, and the
  // allowance, 5% plus the spread of that very pairing, let it run up to 1.27x before any doubt.
  Verdict v;
  v.correctness = Correctness::Pass;
  v.paired = {100, 107, 0.95, 0.01, 0.225, ""};
  CHECK_THAT(best_out_of_line(v, 100, 0.01), Catch::Contains("7% slower"));
  v.paired.best_us = 103;  // inside its kept allowance, but far noisier than it was kept
  CHECK_THAT(best_out_of_line(v, 100, 0.01), Catch::Contains("spread 22.5%") && Catch::Contains("1.0% when it was kept"));
  v.paired.best_spread = 0.03;
  CHECK(best_out_of_line(v, 100, 0.01).empty());
}

TEST_CASE("the spread a best is credited with is its own when kept, capped", "[loop][best]") {
  Verdict v;
  CHECK(kept_spread(v) == 0);  // no timing: nothing credited
  v.timing = Timing{100, 100, 90, 130, 98, 102};
  CHECK(kept_spread(v) == Approx(0.04));
  v.timing->p90_us = 160;
  CHECK(kept_spread(v) == Approx(kKeptSpreadCap));
}

TEST_CASE("the keep rule: paired when the harness paired, else the median against the best", "[loop]") {
  Verdict v;
  v.correctness = Correctness::Pass;
  v.timing = Timing{100, 98.0};
  CHECK(faster_than_best(v, 100, 0.01));
  v.paired = {100, 100, 0.98, 0.02};
  CHECK_FALSE(faster_than_best(v, 100, 0.01));
  v.paired.noise = 0.001;
  CHECK(faster_than_best(v, 100, 0.01));
}

TEST_CASE("decision: a candidate that clears the threshold beside the best is kept, against the best before it", "[loop][decision]") {
  Kernel k;
  const CandidateDecision d = decide_candidate(edit(7), paired(0.9), k.progress, 0.01);
  CHECK(d.keep);
  CHECK_FALSE(d.stale);
  CHECK_FALSE(d.judge_again);
  CHECK(d.doubt.empty());
  CHECK(d.previous_best_us == 100);
  CHECK(d.row.kept);
  CHECK(d.row.experiment == 7);
  CHECK(d.row.tag == "rmsnorm");
  CHECK(d.row.correctness == "PASS");
  CHECK(d.row.latency_us == Approx(90));
  CHECK(d.row.description == "AK_VEC 4 -> 8");
  CHECK(d.row.move == MoveKind::Edit);
  CHECK(d.row.llm_tokens == 1200);
  CHECK(d.row.predicted_us == 85);
  CHECK(d.row.paired_ratio == Approx(0.9));
  CHECK(d.row.paired_best_us == Approx(100));
  CHECK(d.row.failure.empty());
  CHECK(d.row.commit.empty());   // the recording's
}

TEST_CASE("decision: a candidate within the threshold or its noise is reverted, with no failure", "[loop][decision]") {
  Kernel k;
  CandidateDecision d = decide_candidate(edit(7), paired(0.995), k.progress, 0.01);
  CHECK_FALSE(d.keep);
  CHECK_FALSE(d.row.kept);
  CHECK(d.row.correctness == "PASS");
  CHECK(d.row.failure.empty());
  CHECK_FALSE(d.judge_again_noisy);   // not under the threshold even by its ratio: no second look
  ExperimentJob looked_again = edit(7);
  looked_again.noisy_rejudges = 1;
  d = decide_candidate(looked_again, paired(0.98, 100, 0.02), k.progress, 0.01);   // faster, but not beyond its noise
  CHECK_FALSE(d.keep);
  CHECK_FALSE(d.judge_again_noisy);
  CHECK(d.row.paired_ratio == Approx(0.98));
  // Timed alone (no pairing): its median against the recorded best.
  CHECK(decide_candidate(edit(7), passing(98), k.progress, 0.01).keep);
  CHECK_FALSE(decide_candidate(edit(7), passing(99.5), k.progress, 0.01).keep);
}

TEST_CASE("decision: a pairing under the threshold by its ratio but not beyond its noise is looked at again, once", "[loop][decision]") {
  Kernel k;
  CandidateDecision d = decide_candidate(edit(7), paired(0.983, 100, 0.015), k.progress, 0.01);
  CHECK(d.judge_again_noisy);
  CHECK_FALSE(d.keep);
  CHECK_FALSE(d.judge_again);
  CHECK(d.row.experiment == 0);   // nothing to record yet
  // Neither a baseline, a failing file, a stale pairing, nor one beside a best out of line.
  CHECK_FALSE(decide_candidate(baseline(), paired(0.983, 100, 0.015), k.progress, 0.01).judge_again_noisy);
  Verdict failed = paired(0.983, 100, 0.015);
  failed.correctness = Correctness::Fail;
  CHECK_FALSE(decide_candidate(edit(7), failed, k.progress, 0.01).judge_again_noisy);
  CHECK_FALSE(decide_candidate(edit(7, 2), paired(0.983, 100, 0.015), k.progress, 0.01).judge_again_noisy);
  CHECK_FALSE(decide_candidate(edit(7), paired(0.983, 140, 0.015), k.progress, 0.01).judge_again_noisy);
  // Timed alone there is no pairing to repeat.
  CHECK_FALSE(decide_candidate(edit(7), passing(98.3), k.progress, 0.02).judge_again_noisy);
}

TEST_CASE("decision: a failing candidate is reverted with the harness's message on one line", "[loop][decision]") {
  Kernel k;
  Verdict v = failing("shape sweep: wrong output at [3, 17]\nexpected 1.0, got 2.0");
  v.correctness = Correctness::CompileError;
  const CandidateDecision d = decide_candidate(edit(8), v, k.progress, 0.01);
  CHECK_FALSE(d.keep);
  CHECK(d.row.correctness == "COMPILE_ERROR");
  CHECK(d.row.latency_us == 0);
  CHECK(d.row.failure.find('\n') == std::string::npos);
  CHECK_THAT(d.row.failure, Catch::Contains("wrong output at [3, 17]"));
}

TEST_CASE("decision: a best out of line beside a faster candidate keeps nothing and asks for the best alone", "[loop][decision]") {
  Kernel k;
  const CandidateDecision d = decide_candidate(edit(9), paired(0.8, 140), k.progress, 0.01);
  CHECK_FALSE(d.keep);
  CHECK_THAT(d.doubt, Catch::Contains("40% slower"));
  CHECK_THAT(d.row.failure, Catch::StartsWith("not kept: the best ran 140.00 us") &&
                                Catch::EndsWith("the best is judged again on its own"));
  CHECK(d.row.correctness == "PASS");
}

TEST_CASE("decision: a stale pairing that looks faster is judged again beside the new best, a slower one reverted", "[loop][decision]") {
  Kernel k;
  CandidateDecision d = decide_candidate(edit(10, 2), paired(0.9), k.progress, 0.01);
  CHECK(d.stale);
  CHECK(d.judge_again);
  CHECK_FALSE(d.keep);
  d = decide_candidate(edit(10, 2), paired(1.02, 140), k.progress, 0.01);
  CHECK(d.stale);
  CHECK_FALSE(d.judge_again);
  CHECK_FALSE(d.keep);
  CHECK(d.doubt.empty());   // a pairing with a replaced best says nothing about the best now
  // Stale but timed alone: nothing paired to judge again beside.
  d = decide_candidate(edit(10, 2), passing(50), k.progress, 0.01);
  CHECK_FALSE(d.judge_again);
  CHECK(d.keep);
}

TEST_CASE("decision: a structure move stays one in its row", "[loop][decision]") {
  Kernel k;
  ExperimentJob job = edit(11);
  job.proposal.move = MoveKind::Structure;
  CHECK(decide_candidate(job, paired(1.1), k.progress, 0.01).row.move == MoveKind::Structure);
}

TEST_CASE("decision: a passing starter is kept as the baseline at 1.0x, its row saying against what", "[loop][decision]") {
  Kernel k;
  k.progress.has_baseline = false;
  k.progress.best_us = 0;
  const CandidateDecision d = decide_candidate(baseline(), passing(120), k.progress, 0.01);
  CHECK(d.keep);
  CHECK_FALSE(d.stale);
  CHECK(d.previous_best_us == 0);
  CHECK(d.row.move == MoveKind::Baseline);
  CHECK(d.row.speedup == 1.0);
  CHECK(d.row.description == "baseline: the starter; speedups against the starter");
}

TEST_CASE("decision: a baseline against the config's time or a library keeps the verdict's speedup", "[loop][decision]") {
  Kernel k;
  k.progress.has_baseline = false;
  k.entry.baseline_us = 180;
  Verdict v = passing(120);
  v.speedup = 1.5;
  CandidateDecision d = decide_candidate(baseline(), v, k.progress, 0.01);
  CHECK(d.row.speedup == 1.5);
  CHECK(d.row.description == "baseline: the starter; speedups against baseline_us in the config");
  k.entry.baseline_us.reset();
  v.baseline_source = "cuBLAS";
  d = decide_candidate(baseline(), v, k.progress, 0.01);
  CHECK(d.row.speedup == 1.5);
  CHECK(d.row.description == "baseline: the starter; speedups against cuBLAS");
}

TEST_CASE("decision: the LLM's first file of a user type is described as such, passing or not", "[loop][decision]") {
  Kernel k;
  k.progress.has_baseline = false;
  k.progress.llm_writes_first = true;
  ExperimentJob job = baseline();
  job.proposal.description = "a first fused kernel";
  CandidateDecision d = decide_candidate(job, passing(120), k.progress, 0.01);
  CHECK(d.keep);
  CHECK(d.row.description == "baseline: the starter; speedups against the starter (the LLM's first passing file)");
  d = decide_candidate(job, failing("smoke: NaN in the output"), k.progress, 0.01);
  CHECK_FALSE(d.keep);
  CHECK(d.row.description == "first file, not passing: a first fused kernel");
  CHECK(d.row.failure == "smoke: NaN in the output");
}

TEST_CASE("decision: the best judged again after another GPU's keep changes nothing", "[loop][decision][best]") {
  Kernel k;
  ExperimentJob job = edit(12, 2);
  job.rejudge_best = true;
  const BestRejudgementDecision d = decide_best_rejudgement(job, failing("smoke: wrong"), k.progress, {});
  CHECK(d.outcome == BestRejudgementDecision::Outcome::Replaced);
  CHECK(d.row.correctness == "BEST_REPLACED");
  CHECK_FALSE(d.row.kept);
  CHECK_THAT(d.row.description, Catch::Contains("(FAIL)") && Catch::Contains("nothing changes"));
}

TEST_CASE("decision: the best that passes alone stays, at the time it takes now", "[loop][decision][best]") {
  Kernel k;
  ExperimentJob job = edit(12);
  job.rejudge_best = true;
  const BestRejudgementDecision d = decide_best_rejudgement(job, passing(104), k.progress, {});
  CHECK(d.outcome == BestRejudgementDecision::Outcome::StillPasses);
  CHECK(d.row.correctness == "BEST_PASS");
  CHECK_FALSE(d.row.kept);
  CHECK(d.row.latency_us == Approx(104));
  CHECK(d.row.description == "the best judged again on its own: 104.00 us now, kept at 100.00 us");
}

TEST_CASE("decision: a failing best is demoted to the one before it, whose numbers its row carries", "[loop][decision][best]") {
  Kernel k;
  ExperimentJob job = edit(12);
  job.rejudge_best = true;
  ResultRow first{1, "rmsnorm", "rmsnorm", 1500, 120, 0.4, 1.25, "PASS", 10, true, "aaa111", 0, 5, "baseline"};
  ResultRow second{6, "rmsnorm", "rmsnorm", 1800, 100, 0.5, 1.5, "PASS", 10, true, "bbb222", 900, 5, "AK_VEC 8"};
  second.move = MoveKind::Structure;
  const Verdict v = failing("shape sweep: wrong output\nat 3");

  BestRejudgementDecision d = decide_best_rejudgement(job, v, k.progress, {second});
  CHECK(d.outcome == BestRejudgementDecision::Outcome::FailsAlone);
  CHECK_FALSE(d.row.kept);
  CHECK(d.row.correctness == "FAIL");
  CHECK(d.row.failure == "shape sweep: wrong output at 3");

  d = decide_best_rejudgement(job, v, k.progress, {first, second});
  CHECK(d.outcome == BestRejudgementDecision::Outcome::Demoted);
  CHECK(d.back_to == 1);
  CHECK(d.row.experiment == 12);
  CHECK(d.row.correctness == "DEMOTED");
  CHECK(d.row.kept);
  CHECK(d.row.latency_us == 120);   // the earlier best's numbers: a restart recovers its state
  CHECK(d.row.speedup == 1.25);
  CHECK(d.row.llm_tokens == 0);
  CHECK(d.row.commit.empty());      // the recording's commit, not the earlier one's
  CHECK(d.row.move == MoveKind::Edit);
  CHECK(d.row.description == "the best judged again on its own fails: demoted; experiment 1 is the best again");
  CHECK(d.row.failure == "shape sweep: wrong output at 3");
}
