#include <catch2/catch.hpp>

#include "common/atomic_write.hpp"
#include "daemon/loop/run_loop.hpp"
#include "daemon/report/run_report.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"

using namespace ak;
using namespace ak::test;

namespace {
/// A finished run of three experiments on rmsnorm: starter 100 us, 90 kept, 95 reverted.
std::string finished_run(const TempDir& dir) {
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(90, "faster");
  pr.add(95, "slower");
  auto cfg = loop_config(dir);
  RunLoop loop(cfg, ev, pr, clock);
  REQUIRE(loop.run().ok());
  return cfg.run_dir();
}
}  // namespace

TEST_CASE("status reads a run folder: per kernel best, speedup and convergence, and the last step", "[report]") {
  TempDir dir;
  std::string run = finished_run(dir);
  auto r = run_autokernel("status --run " + run);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("run t (converged): 3 experiments"));
  CHECK_THAT(r.out, Catch::Matches("(.|\\n)*rmsnorm +100\\.00 +90\\.00 +1\\.111x(.|\\n)*"));
  CHECK_THAT(r.out, Catch::Contains("speedups are against: rmsnorm: the starter"));
  CHECK_THAT(r.out, Catch::Contains("the proposer has nothing left to try"));
  CHECK_THAT(r.out, Catch::Contains("last: experiment 3 rmsnorm: slower: PASS 95.00 us, reverted"));
  CHECK(run_autokernel("status --run " + dir.path.string() + "/nothing").exit_code == 2);
}

TEST_CASE("report writes a Markdown summary and an SVG with the kept steps filled", "[report]") {
  TempDir dir;
  std::string run = finished_run(dir);
  auto r = run_autokernel("report --run " + run);
  CHECK(r.exit_code == 0);
  std::string md = read_file(run + "/report.md"), svg = read_file(run + "/progress.svg");
  CHECK_THAT(md, Catch::Contains("| 2 | rmsnorm | 90.00 |"));
  CHECK_THAT(md, Catch::Contains("- PASS: 3"));
  CHECK_THAT(md, Catch::Contains("![% of the measured peak over experiments](progress.svg)"));
  CHECK_THAT(svg, Catch::StartsWith("<svg"));
  size_t filled = 0;
  for (size_t at = 0; (at = svg.find("r=\"5\"", at)) != std::string::npos; ++at) ++filled;
  CHECK(filled == 2);   // the starter and experiment 2
  // --out a folder that does not exist yet: it is made, as for several runs.
  const std::string out = (dir.path / "reports" / "t").string();
  CHECK(run_autokernel("report --run " + run + " --out " + out).exit_code == 0);
  CHECK_THAT(read_file(out + "/report.md"), Catch::Contains("| 2 | rmsnorm | 90.00 |"));
}

TEST_CASE("status shows each GPU of the run and what it is doing", "[report][parallel]") {
  TempDir dir;
  std::string run = finished_run(dir);
  auto state = read_file(run + "/state.json");
  // As the daemon writes it while experiment 7 runs on GPU 1.
  const std::string busy = R"("gpus": [{"device": 0, "doing": "idle", "model": "NVIDIA H200", )"
                           R"("seconds": {"start": 1.0, "candidate": 8.0, "no_open_kernel": 1.0, "someday": 4.0}}, )"
                           R"({"device": 1, "doing": "experiment 7 rmsnorm: tier 1: AK_THREADS 256 -> 128", "model": "NVIDIA H200"}])";
  const size_t at = state.find("\"gpus\"");
  REQUIRE(at != std::string::npos);
  const size_t end = state.find(']', at);
  state.replace(at, end + 1 - at, busy);
  REQUIRE(write_file_atomic(run + "/state.json", state).ok());
  auto r = run_autokernel("status --run " + run);
  // Where its time went since the daemon started (a key it does not know is left out).
  CHECK_THAT(r.out, Catch::Contains("GPU 0 (NVIDIA H200): idle (since the daemon started: judged 80.0% of its 10.0 s; "
                                    "idle: start 1.0 s, no_open_kernel 1.0 s)\n"));
  CHECK_THAT(r.out, Catch::Contains("GPU 1 (NVIDIA H200): experiment 7 rmsnorm: tier 1: AK_THREADS 256 -> 128\n"));
}

TEST_CASE("report over several run folders gives the whole program's speedup over all their kernels", "[report][scale]") {
  TempDir dir;
  std::vector<std::string> runs;
  for (const char* box : {"model-box0", "model-box1"}) {
    ScriptedEvaluator ev;
    ScriptedProposer pr;
    ManualClock clock;
    pr.add(50, "twice as fast");
    auto cfg = loop_config(dir);   // rmsnorm, weight 0.5, on each box: two halves of one program
    cfg.run.name = box;
    RunLoop loop(cfg, ev, pr, clock);
    REQUIRE(loop.run().ok());
    runs.push_back(cfg.run_dir());
  }
  const std::string out = (dir.path / "combined").string();
  auto r = run_autokernel("report --run " + runs[0] + "," + runs[1] + " --out " + out);
  CHECK(r.exit_code == 0);
  std::string md = read_file(out + "/report.md");
  CHECK_THAT(md, Catch::Contains("Whole program (Amdahl over every run's kernels and weights): 2.000x, 4 experiments in all."));
  CHECK_THAT(md, Catch::Contains("| model-box1 | converged | rmsnorm | 50.00 | 2.000x | 0.500 | 2 |"));
  CHECK_THAT(md, Catch::Contains("# autokernel run model-box0"));
  CHECK(read_file(out + "/model-box1-progress.svg").rfind("<svg", 0) == 0);
  CHECK(run_autokernel("report --run " + runs[0] + "," + runs[1]).exit_code == 2);   // no --out
}

TEST_CASE("progress.svg has one scale, % of the measured peak, for GB/s and TFLOPS kernels alike", "[report]") {
  ResultRow norm{1, "rmsnorm", "rmsnorm", 2700, 50, 0.90, 1, "PASS", 0, true, "a", 0, 1, "baseline: the starter"};
  ResultRow gemm{2, "gemm", "gemm", 500, 900, 0.50, 1, "PASS", 0, true, "b", 0, 1, "baseline: the starter"};
  const std::string svg = progress_svg({norm, gemm});
  // Y(p) = 410 - 380 * p / 100: 90% at 68, 50% at 220, whatever the units of the throughputs.
  CHECK_THAT(svg, Catch::Contains("cy=\"68.0\""));
  CHECK_THAT(svg, Catch::Contains("cy=\"220.0\""));
  CHECK_THAT(svg, Catch::Contains("% of the measured peak"));
  CHECK_THAT(svg, Catch::Contains(">100%</text>"));
  CHECK_THAT(svg, Catch::Contains(">gemm</text>"));       // the legend
  CHECK_THAT(svg, Catch::Contains(">rmsnorm</text>"));
  CHECK(svg.find("GB/s or TFLOPS") == std::string::npos);
}

TEST_CASE("the run keeps every judged experiment's counters beside results.tsv, and the report shows the kept ones", "[report][counters]") {
  TempDir dir;
  ScriptedEvaluator ev;
  HardwareCounters c;
  c.passes = 5;
  c.dram_pct = 91, c.sm_pct = 30, c.achieved_occupancy_pct = 85, c.l2_hit_pct = 40, c.tensor_pct = 0, c.bank_conflict_ratio = 0;
  c.stalls = {{"long_scoreboard", 0.62}, {"selected", 0.2}};
  ev.counters = c;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(90, "faster");
  pr.add(95, "slower");
  auto cfg = loop_config(dir);
  RunLoop loop(cfg, ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = read_counters_table(counters_table_path(cfg.run_dir()));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].experiment == 1);
  CHECK(rows[2].counters.dram_pct == Approx(91));
  // The proposer saw the best's counters in its context: what the prompt and the tuner read.
  REQUIRE(pr.seen.size() >= 2);
  const PastExperiment* best = current_best_experiment(pr.seen[1]);
  REQUIRE(best);
  REQUIRE(best->counters.has_value());
  CHECK(best->counters->dram_pct == Approx(91));

  auto snap = read_run(cfg.run_dir());
  REQUIRE(snap.ok());
  const std::string md = markdown_report(*snap, "progress.svg");
  CHECK_THAT(md, Catch::Contains("## What limited each kept version"));
  CHECK_THAT(md, Catch::Contains("| 2 | rmsnorm | 90.00 | memory-bound (at 91% of DRAM peak): fewer bytes, not more threads | 91% | 30% |"));
  CHECK(md.find("| 3 | rmsnorm | 95.00 | memory-bound") == std::string::npos);   // reverted: not a kept version
  const std::string svg = progress_svg(snap->rows, snap->counters);
  CHECK_THAT(svg, Catch::Contains(">memory 91%</text>"));
  CHECK_THAT(svg, Catch::Contains("DRAM 91.0% of peak, SM 30.0% of peak"));
}

TEST_CASE("a kept version judged twice shows the counters of the look that decided", "[report][counters]") {
  RunSnapshot s;
  s.state = nlohmann::json::object();
  ResultRow kept;
  kept.experiment = 2, kept.tag = "rmsnorm", kept.kept = true, kept.latency_us = 90, kept.correctness = "PASS";
  s.rows.push_back(kept);
  CountersRow first, second;
  first.experiment = second.experiment = 2;
  first.tag = second.tag = "rmsnorm";
  first.counters.dram_pct = 50, first.counters.sm_pct = 20, first.counters.passes = 2;
  second.counters.dram_pct = 91, second.counters.sm_pct = 30, second.counters.passes = 2;
  s.counters = {first, second};   // the first look, then the one with more launches that kept it
  const std::string md = markdown_report(s, "progress.svg");
  CHECK_THAT(md, Catch::Contains("| 91% | 30% |"));
  CHECK(md.find("| 50% | 20% |") == std::string::npos);
}

TEST_CASE("a report of a run without counters has no counters section", "[report][counters]") {
  TempDir dir;
  std::string run = finished_run(dir);
  auto snap = read_run(run);
  REQUIRE(snap.ok());
  CHECK(snap->counters.empty());
  CHECK(markdown_report(*snap, "progress.svg").find("What limited") == std::string::npos);
}
