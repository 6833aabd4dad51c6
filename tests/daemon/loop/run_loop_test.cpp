#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/file_text.hpp"
#include "daemon/loop/run_loop.hpp"
#include "daemon/proposers/model_notes.hpp"
#include "daemon/proposers/proposal_context.hpp"
#include "daemon/run_folder/git_history.hpp"
#include "daemon/run_folder/in_flight_ledger.hpp"
#include "daemon/run_folder/kernel_progress.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"

using namespace ak;
using namespace ak::test;

namespace {

struct CrashHere {};

}  // namespace

TEST_CASE("the starter is measured first, a faster candidate is kept and committed, a slower one reverted", "[loop]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(90, "faster by ten");
  pr.add(89.5, "faster by less than 1%");
  pr.add_failing("wrong answer");
  pr.add(80, "faster again");
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 3\n"), ev, pr, clock);
  auto out = loop.run();
  REQUIRE(out.ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].description == "baseline: the starter; speedups against the starter");
  CHECK(rows[0].kept);
  CHECK(rows[0].speedup == Approx(1.0));            // no baseline_us: the starter, not the 150 us reference kernel
  CHECK(rows[1].kept);
  CHECK(rows[1].latency_us == Approx(90));
  CHECK_FALSE(rows[2].kept);                         // under the 1% keep threshold
  CHECK_FALSE(rows[3].kept);
  CHECK(rows[3].correctness == "FAIL");
  CHECK(rows[3].description == "wrong answer");
  CHECK_THAT(rows[3].failure, Catch::Contains("wrong output on 100x3000"));
  CHECK(rows[4].kept);
  CHECK(rows[4].speedup == Approx(100.0 / 80));      // the same baseline throughout
  // The kept file is what the run folder holds now, and the history has one commit per keep.
  CHECK(read_file_text(loop.directory().path("kernels/rmsnorm.cu")).value_or("") == "// us=80.000000\nfaster again\n");
  auto git = GitHistory::open(loop.directory().root(), "autokernel/t");
  REQUIRE(git.ok());
  auto log = (*git)->log();
  REQUIRE(log.ok());
  REQUIRE(log->size() == 3);
  CHECK_THAT(log->front().message, Catch::StartsWith("experiment 5: rmsnorm: faster again"));
  CHECK_THAT(log->front().message, Catch::Contains("-11.1% time vs the previous best (90.00 us)"));
  CHECK(log->front().trailers.at("Autokernel-Latency-Us") == "80.000");
  CHECK(rows[4].commit == log->front().id);
  // Every candidate is kept on disk, kept or not.
  for (int n = 1; n <= 5; ++n)
    CHECK(std::filesystem::exists(loop.directory().path(loop.directory().experiment_file(n, "rmsnorm"))));
}

TEST_CASE("the baseline is the config's baseline_us, else cuBLAS for a GEMM, else the starter, and the rows say which", "[loop]") {
  {
    TempDir dir;
    ScriptedEvaluator ev;
    ScriptedProposer pr;
    ManualClock clock;
    pr.add(50, "twice as fast");
    RunLoop loop(loop_config(dir, "", "[[kernel]]\ntype = \"rmsnorm\"\nshape = [1024, 1024]\nbaseline_us = 150\n"), ev, pr, clock);
    REQUIRE(loop.run().ok());
    auto rows = rows_of(loop);
    CHECK(rows[0].description == "baseline: the starter; speedups against baseline_us in the config");
    CHECK(rows[0].speedup == Approx(1.5));
    CHECK(rows[1].speedup == Approx(3.0));
    CHECK(loop.kernels()[0].baseline_source == "baseline_us in the config");
  }
  {
    TempDir dir;
    ScriptedEvaluator ev;
    ev.baseline_source = "cuBLAS";
    ScriptedProposer pr;
    ManualClock clock;
    RunLoop loop(loop_config(dir), ev, pr, clock);
    REQUIRE(loop.run().ok());
    CHECK(rows_of(loop)[0].description == "baseline: the starter; speedups against cuBLAS");
    CHECK(rows_of(loop)[0].speedup == Approx(1.5));
  }
}

TEST_CASE("with paired timings a candidate is kept only when its ratio to the best clears the threshold beyond the noise", "[loop]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ev.pair_noise = 0.004;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(98.8, "1.2% faster by the medians, inside threshold plus noise");
  pr.queue.push_back({"// us=103 ratio=0.97\nslow moment\n", "3% faster beside the best, in a slow moment", 10, 0});
  pr.add(95, "faster again");
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 3\n"), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 4);
  CHECK(ev.best_sources[0].empty());                       // the starter is timed alone
  CHECK(ev.best_sources[1] == rmsnorm_spec().starter_source());
  CHECK_FALSE(rows[1].kept);                               // 0.988 is not under 0.99 - 0.004
  CHECK(rows[1].paired_ratio == Approx(0.988));
  // Under the threshold by its ratio: judged again with twice the launches, still within its noise.
  CHECK(ev.repetitions[2] == 2 * ev.repetitions[1]);
  CHECK(rows[1].paired_noise == Approx(0.004 / std::sqrt(2.0)).margin(1e-5));   // the row keeps five places
  CHECK(rows[1].paired_best_us == Approx(100));
  CHECK(rows[2].kept);                                     // its median is slower, its pairs are not
  CHECK(rows[2].paired_ratio == Approx(0.97));
  CHECK(ev.best_sources[4] == "// us=103 ratio=0.97\nslow moment\n");
  CHECK(rows[3].kept);                                     // 95 / 103
}

TEST_CASE("every request names the run folder's compiled folder, which the run creates, for the workers to share bests", "[loop]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(95, "faster");
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 1\n"), ev, pr, clock);
  REQUIRE(loop.run().ok());
  REQUIRE(ev.shared_compiles.size() >= 2);
  for (const std::string& folder : ev.shared_compiles) CHECK(folder == ev.shared_compiles[0]);
  CHECK(ev.shared_compiles[0].size() > std::string("/compiled").size());
  CHECK(ev.shared_compiles[0].substr(ev.shared_compiles[0].size() - 9) == "/compiled");
  CHECK(std::filesystem::is_directory(ev.shared_compiles[0]));
}

TEST_CASE("a candidate faster by its ratio but within its noise is judged again with twice the launches, once", "[loop]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ev.pair_noise = 0.001;
  ScriptedProposer pr;
  ManualClock clock;
  pr.queue.push_back({"// us=98 noise=0.012\nA\n", "2% faster, noise 1.2%", 10, 0});   // 0.98 is not under 0.978
  pr.queue.push_back({"// us=96.5 noise=0.03\nB\n", "1.5% faster, noise 3%", 10, 0});
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 1\n"), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 3);   // one row each: the first looks are not recorded
  CHECK(ev.calls == 5);
  CHECK(ev.repetitions[2] == 2 * ev.repetitions[1]);
  CHECK(rows[1].description == "2% faster, noise 1.2%");
  CHECK(rows[1].kept);                                     // 0.98 under 0.99 - 0.0085 at 200 launches
  CHECK(rows[1].paired_noise == Approx(0.012 / std::sqrt(2.0)).margin(1e-5));
  CHECK(ev.best_sources[3] == "// us=98 noise=0.012\nA\n");   // B beside A, then again
  CHECK(ev.repetitions[4] == 2 * ev.repetitions[3]);
  CHECK_FALSE(rows[2].kept);                               // still within its noise: reverted, never a third look
  auto state = nlohmann::json::parse(read_file_text(loop.directory().state()).value_or("{}"));
  CHECK(state["noisy_verdicts"]["judged_again"] == 2);
}

TEST_CASE("a best that runs slower beside a candidate than when kept is judged again alone, and demoted if it fails", "[loop][best]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ev.pair_noise = 0.001;
  ScriptedProposer pr;
  ManualClock clock;
  {
    pr.queue.push_back({"// us=80 fails_alone\nA\n", "A", 10, 0});   // kept beside the starter
    pr.queue.push_back({"// us=70 best_us=120\nB\n", "B", 10, 0});   // the best sandbags beside it
    pr.add(90, "C");
    RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 2\n"), ev, pr, clock);
    REQUIRE(loop.run().ok());
    auto rows = rows_of(loop);
    REQUIRE(rows.size() >= 5);
    CHECK(rows[1].kept);
    CHECK_FALSE(rows[2].kept);   // 0.58x beside a best that ran 50% slower than it was kept at
    CHECK(rows[2].paired_best_us == Approx(120));
    CHECK_THAT(rows[2].failure, Catch::Contains("not kept") && Catch::Contains("slower than the 80.00 us it was kept at"));
    CHECK(rows[3].correctness == "DEMOTED");
    CHECK(rows[3].kept);
    // The verdict of the judgement alone is kept beside it, as every judged experiment's is.
    REQUIRE(rows[3].experiment == 4);
    CHECK_THAT(read_file_text(loop.directory().path("experiments/0004-rmsnorm.verdict.json")).value_or(""),
               Catch::Contains("\"correctness\": \"FAIL\""));
    CHECK(rows[3].latency_us == Approx(100));   // the starter's numbers: it is the best again
    CHECK_THAT(rows[3].description, Catch::Contains("experiment 1 is the best again"));
    CHECK(ev.best_sources[3].empty());          // judged alone
    CHECK(rows[4].kept);                        // C beside the starter: 0.9x
    CHECK(rows[4].description == "C");
    CHECK(read_file_text(loop.directory().path("kernels/rmsnorm.cu")).value_or("") == "// us=90.000000\nC\n");
  }
  // A restart finds the same best from results.tsv alone.
  ScriptedProposer none;
  RunLoop again(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 2\n"), ev, none, clock);
  auto resumed = again.run();
  INFO((resumed.ok() ? std::string() : resumed.error().message));
  REQUIRE(resumed.ok());
  CHECK(again.kernels()[0].best_us == Approx(90));
  auto standing = standing_bests(rows_of(again), "rmsnorm");
  REQUIRE(standing.size() == 2);
  CHECK(standing.back().experiment == 5);
}

TEST_CASE("a best whose launches spread wide beside a candidate keeps nothing beside it and is judged again alone", "[loop][best]") {
  // Its allowance is the spread it had when kept (0 here), never the pairing's: a spread of 0.225
  // once widened the allowance to 1.27x of its kept time.
  TempDir dir;
  ScriptedEvaluator ev;
  ev.pair_noise = 0.001;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(80, "A");
  pr.queue.push_back({"// us=70 best_us=82 best_spread=0.225\nB\n", "B", 10, 0});
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 1\n"), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 4);
  CHECK(rows[1].kept);                   // A
  CHECK_FALSE(rows[2].kept);             // B, though 0.875x of the best beside it
  CHECK_THAT(rows[2].failure, Catch::Contains("spread 22.5%") && Catch::Contains("judged again on its own"));
  CHECK(rows[3].correctness == "BEST_PASS");
  CHECK(ev.best_sources[3].empty());     // judged alone
}

TEST_CASE("a best judged again that passes keeps its place at the time it takes now, and no revert is counted", "[loop][best]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ev.pair_noise = 0.001;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(80, "A");
  pr.queue.push_back({"// us=70 best_us=120\nB\n", "B", 10, 0});
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 1\n"), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 4);
  CHECK(rows[3].correctness == "BEST_PASS");
  CHECK_FALSE(rows[3].kept);
  CHECK(loop.kernels()[0].best_us == Approx(80));
  CHECK(loop.kernels()[0].consecutive_reverts == 1);   // B's alone
}

TEST_CASE("with [run] git_remote every kept step reaches the remote's copy of the run's branch", "[loop][git]") {
  TempDir dir;
  const auto bare = dir.path / "shared.git";
  REQUIRE(std::system(("git init -q --bare " + bare.string()).c_str()) == 0);
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(90, "faster");
  pr.add(95, "slower");
  pr.add(80, "faster again");
  RunLoop loop(loop_config(dir, "git_remote = \"" + bare.string() + "\"\n"), ev, pr, clock);
  REQUIRE(loop.run().ok());
  const std::string log = run_shell("git --git-dir=" + bare.string() + " log --format=%s autokernel/t").out;
  CHECK(log == "experiment 4: rmsnorm: faster again\nexperiment 2: rmsnorm: faster\nexperiment 1: rmsnorm: baseline: the starter; speedups against the starter\n");
}

TEST_CASE("the run folder is private to the user the daemon runs as, an older one too", "[loop]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "t");
  std::ofstream(dir.path / "t" / "notes.txt") << "left by an older autokernel";
  std::filesystem::permissions(dir.path / "t", std::filesystem::perms(0755));
  std::filesystem::permissions(dir.path / "t" / "notes.txt", std::filesystem::perms(0644));
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(90, "faster");
  RunLoop loop(loop_config(dir), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto mode = [](const std::string& p) { return int(std::filesystem::status(p).permissions()) & 0777; };
  const RunDirectory& d = loop.directory();
  CHECK(mode(d.root()) == 0700);
  CHECK(mode(d.path("experiments")) == 0700);
  CHECK(mode(d.results()) == 0600);
  CHECK(mode(d.path("kernels/rmsnorm.cu")) == 0600);
  CHECK(mode(d.path(d.experiment_file(2, "rmsnorm"))) == 0600);
  CHECK(mode(d.path("notes.txt")) == 0600);
}

TEST_CASE("the proposer sees the current best file and the kernel's history", "[loop]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(90, "one");
  pr.add(95, "two");
  RunLoop loop(loop_config(dir), ev, pr, clock);
  REQUIRE(loop.run().ok());
  REQUIRE(pr.seen.size() == 3);
  CHECK(pr.seen[0].best_source == rmsnorm_spec().starter_source());
  CHECK(pr.seen[0].history.size() == 1);
  CHECK(pr.seen[2].best_source == "// us=90.000000\none\n");
  CHECK(pr.seen[2].history.back().description == "two");
  CHECK_FALSE(pr.seen[2].history.back().kept);
}

TEST_CASE("the proposer is shown a failed experiment's compile log", "[loop]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.queue.push_back({"// COMPILE\n", "a typo", 0, 0});
  pr.add(95, "after the typo");
  RunLoop loop(loop_config(dir), ev, pr, clock);
  REQUIRE(loop.run().ok());
  REQUIRE(pr.seen.size() >= 2);
  const PastExperiment& failed = pr.seen[1].history.back();
  CHECK(failed.correctness == "COMPILE_ERROR");
  CHECK(failed.description == "a typo");
  CHECK_THAT(failed.compile_log, Catch::Contains("identifier \"flaot\" is undefined"));
  CHECK_THAT(failed.source, Catch::StartsWith("// COMPILE"));   // the file it failed on, for the diff
  CHECK(std::filesystem::exists(loop.directory().path("experiments/0002-rmsnorm.verdict.json")));
}

TEST_CASE("each convergence rule ends a kernel", "[loop][convergence]") {
  ScriptedEvaluator ev;
  ManualClock clock;
  SECTION("reverts in a row") {
    TempDir dir;
    ScriptedProposer pr;
    for (int i = 0; i < 10; ++i) pr.add(120, "slower");
    RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 3\n"), ev, pr, clock);
    auto out = loop.run();
    REQUIRE(out.ok());
    CHECK(rows_of(loop).size() == 4);
    CHECK(*converged(loop.kernels()[0], ConvergenceConfig{3}) == "3 reverts in a row");
  }
  SECTION("fraction of peak") {
    TempDir dir;
    ScriptedProposer pr;
    ev.peak_gbps = 10;  // every timing is over it: the starter alone reaches the target
    RunLoop loop(loop_config(dir, "[convergence]\npeak_fraction = 0.9\n"), ev, pr, clock);
    REQUIRE(loop.run().ok());
    CHECK(rows_of(loop).size() == 1);
    CHECK(pr.seen.empty());
  }
  SECTION("fraction of peak, but still slower than the baseline: the search goes on") {
    TempDir dir;
    ScriptedProposer pr;
    ev.peak_gbps = 10;   // every timing is over the peak fraction
    pr.add(70, "faster, still slower than the baseline");
    pr.add(45, "past the baseline");
    pr.add(40, "never asked for");
    RunLoop loop(loop_config(dir, "[convergence]\npeak_fraction = 0.9\n",
                             "[[kernel]]\ntype = \"rmsnorm\"\nshape = [1024, 1024]\nweight = 0.5\nbaseline_us = 50\n"),
                 ev, pr, clock);
    REQUIRE(loop.run().ok());
    CHECK(rows_of(loop).size() == 3);   // the starter (100 us) and 70 us trail the 50 us baseline
    CHECK(pr.queue.size() == 1);
    CHECK_THAT(*converged(loop.kernels()[0], ConvergenceConfig{}), Catch::Contains("of the measured peak"));
  }
  SECTION("speedup over the baseline") {
    TempDir dir;
    ScriptedProposer pr;
    pr.add(45, "big step");
    pr.add(40, "never asked for");
    RunLoop loop(loop_config(dir, "[convergence]\ntarget_speedup = 2.0\n"), ev, pr, clock);
    REQUIRE(loop.run().ok());
    CHECK(rows_of(loop).size() == 2);  // 100 / 45 > 2
    CHECK(pr.queue.size() == 1);
  }
  SECTION("hours on the kernel") {
    TempDir dir;
    ScriptedProposer pr;
    for (int i = 0; i < 10; ++i) pr.add(100 - i * 5, "faster");
    clock.step = 0;
    ev.clock = &clock;
    ev.eval_seconds = 600;  // every experiment takes 10 minutes of the clock
    RunLoop loop(loop_config(dir, "[convergence]\nmax_hours_per_kernel = 1.0\n"), ev, pr, clock);
    REQUIRE(loop.run().ok());
    CHECK(rows_of(loop).size() == 6);  // 10 minutes each: the sixth reaches the hour
  }
  SECTION("a proposer with nothing left") {
    TempDir dir;
    ScriptedProposer pr;
    pr.add(90, "only idea");
    RunLoop loop(loop_config(dir), ev, pr, clock);
    auto out = loop.run();
    REQUIRE(out.ok());
    CHECK(out->kind == RunOutcome::Converged);
    CHECK(rows_of(loop).size() == 2);
  }
}

TEST_CASE("a candidate the harness failed on is judged again, and passes without a row for the failures", "[loop][harness_error]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  ev.harness_failures = 2;   // the starter's first two evaluations: a reference process that died
  pr.add(90, "faster");
  RunLoop loop(loop_config(dir), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].kept);
  CHECK(rows[0].correctness == "PASS");
  CHECK(rows[1].kept);
  CHECK(ev.calls == 4);
  InFlightLedger ledger(loop.directory().in_flight());
  REQUIRE(ledger.load().ok());
  CHECK(ledger.entries().empty());   // each retry reuses the entry of its experiment
}

TEST_CASE("a candidate the harness cannot judge is no revert, and two in a row stop the kernel until a restart", "[loop][harness_error]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir, "[convergence]\nmax_consecutive_reverts = 1\n");
  {
    ScriptedProposer pr;
    pr.queue.push_back({"// HARNESS\na\n", "first", 10, 0});
    pr.queue.push_back({"// HARNESS\nb\n", "second", 10, 0});
    pr.add(90, "not asked before the restart");
    RunLoop loop(cfg, ev, pr, clock);
    REQUIRE(loop.run().ok());
    auto rows = rows_of(loop);
    REQUIRE(rows.size() == 3);
    for (int i : {1, 2}) {
      CHECK(rows[i].correctness == "HARNESS_ERROR");
      CHECK_FALSE(rows[i].kept);
      CHECK_THAT(rows[i].failure, Catch::StartsWith("the harness, not the candidate: smoke: the reference process stopped"));
    }
    CHECK(ev.calls == 1 + 3 + 3);   // each judged three times
    CHECK(pr.queue.size() == 1);
    const KernelProgress& k = loop.kernels()[0];
    CHECK(k.consecutive_reverts == 0);
    CHECK_THAT(*converged(k, cfg.convergence), Catch::StartsWith("the harness could not judge its last 2 candidates"));
    CHECK_THAT(*converged(k, cfg.convergence), Catch::Contains("start the run again"));
  }
  ScriptedProposer pr;
  pr.add(90, "after the restart");
  RunLoop loop(cfg, ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 4);
  CHECK(rows[3].kept);
  CHECK(rows[3].description == "after the restart");
}

TEST_CASE("run budgets end the run", "[loop][budget]") {
  ScriptedEvaluator ev;
  ManualClock clock;
  TempDir dir;
  ScriptedProposer pr;
  for (int i = 0; i < 20; ++i) pr.add(100 - i, "step");
  auto cfg = loop_config(dir);
  cfg.run.max_experiments = 4;
  RunLoop bounded(cfg, ev, pr, clock);
  auto out = bounded.run();
  REQUIRE(out.ok());
  CHECK(out->kind == RunOutcome::BudgetSpent);
  CHECK_THAT(out->why, Catch::Contains("experiment budget (4)"));
  CHECK(rows_of(bounded).size() == 4);
}

TEST_CASE("the token and cost budgets end the run cleanly", "[loop][budget]") {
  ScriptedEvaluator ev;
  ManualClock clock;
  TempDir dir;
  ScriptedProposer pr;
  for (int i = 0; i < 20; ++i) pr.queue.push_back({"// us=" + std::to_string(99 - i) + "\n", "step", 10, 0.25});
  auto cfg = loop_config(dir);
  cfg.llm.token_budget = 30;
  RunLoop loop(cfg, ev, pr, clock);
  auto out = loop.run();
  REQUIRE(out.ok());
  CHECK(out->kind == RunOutcome::BudgetSpent);
  CHECK_THAT(out->why, Catch::Contains("token budget (30)"));
  CHECK(rows_of(loop).size() == 4);   // the starter, then three proposals of 10 tokens
  TempDir dir2;
  ScriptedProposer pr2;
  pr2.queue = pr.queue;
  auto cfg2 = loop_config(dir2);
  cfg2.llm.cost_budget_usd = 0.5;
  RunLoop loop2(cfg2, ev, pr2, clock);
  auto out2 = loop2.run();
  REQUIRE(out2.ok());
  CHECK_THAT(out2->why, Catch::Contains("cost budget ($0.50)"));
  CHECK(rows_of(loop2).size() == 3);
  CHECK_THAT(read_file_text(loop2.directory().state()).value_or(""), Catch::Contains("\"llm_cost_usd\": 0.5"));
}

TEST_CASE("the scheduler measures every starter, then goes where the Amdahl gain is largest", "[loop][scheduler]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  for (int i = 0; i < 3; ++i) pr.add(100 - 10 * (i + 1), "step");
  auto cfg = loop_config(dir, "", "[[kernel]]\ntype = \"rmsnorm\"\nshape = [1024, 1024]\nweight = 0.1\n"
                                  "[[kernel]]\ntype = \"softmax\"\nshape = [1024, 1024]\nweight = 0.6\n");
  cfg.run.max_experiments = 4;
  RunLoop loop(cfg, ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].tag == "rmsnorm");   // starters first, in config order
  CHECK(rows[1].tag == "softmax");
  CHECK(rows[2].tag == "softmax");   // six times the weight
  CHECK(rows[3].tag == "softmax");
}

TEST_CASE("a restart resumes where the run stopped, without duplicating rows", "[loop][resume]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir, "[convergence]\nmax_consecutive_reverts = 2\n");
  {
    ScriptedProposer pr;
    pr.add(90, "first");
    cfg.run.max_experiments = 2;
    RunLoop loop(cfg, ev, pr, clock);
    REQUIRE(loop.run().ok());
  }
  ScriptedProposer pr;
  pr.add(80, "second");
  cfg.run.max_experiments = 0;
  RunLoop loop(cfg, ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 3);   // starter, first, second; then the proposer has nothing left
  CHECK(rows[2].experiment == 3);
  CHECK(rows[2].description == "second");
  CHECK(loop.kernels()[0].best_us == Approx(80));
}

namespace {

/// Runs a loop that "dies" at `point` during its experiment `n`, then a fresh loop on the same
/// folder; returns the rows after the second.
std::vector<ResultRow> crash_then_resume(const std::string& point, long long n, bool tear_row = false) {
  TempDir dir;
  ScriptedEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir);
  {
    ScriptedProposer pr;
    pr.add(90, "first");
    pr.add(80, "second");
    RunLoop loop(cfg, ev, pr, clock);
    long long at_experiment = 0;
    loop.crash_point = [&](const std::string& p) {
      if (p == "evaluated") ++at_experiment;
      if (p == point && at_experiment == n) throw CrashHere{};
    };
    REQUIRE_THROWS_AS(loop.run(), CrashHere);
  }
  if (tear_row) {  // a row cut off mid-write by the power going out
    std::ofstream(cfg.run_dir() + "/results.tsv", std::ios::app) << "3\trmsnorm\trmsnorm\t12";
  }
  ScriptedProposer pr;
  pr.add(80, "second");
  pr.add(70, "third");
  RunLoop loop(cfg, ev, pr, clock);
  auto out = loop.run();
  REQUIRE(out.ok());
  auto rows = rows_of(loop);
  for (size_t i = 0; i < rows.size(); ++i) REQUIRE(rows[i].experiment == (long long)i + 1);  // no gap, no duplicate
  return rows;
}

}  // namespace

TEST_CASE("killed between evaluation and commit: the candidate on disk is run again under the same number", "[loop][resume]") {
  auto rows = crash_then_resume("evaluated", 3);
  REQUIRE(rows.size() == 5);
  CHECK(rows[2].description == "second");   // from the in-flight ledger, before any new proposal
  CHECK(rows[2].kept);
  CHECK(rows[3].description == "second");   // proposed again, now no faster than the best: reverted
  CHECK_FALSE(rows[3].kept);
  CHECK(rows[4].description == "third");
}

TEST_CASE("killed between commit and row: the row is rebuilt from the commit", "[loop][resume]") {
  auto rows = crash_then_resume("committed", 3);
  REQUIRE(rows.size() == 5);
  CHECK(rows[2].description == "second");
  CHECK(rows[2].kept);
  CHECK(rows[2].latency_us == Approx(80));
  CHECK_FALSE(rows[2].commit.empty());
  CHECK(rows[3].description == "second");   // proposed again, now no faster than the best: reverted
  CHECK_FALSE(rows[3].kept);
  CHECK(rows[4].description == "third");
}

TEST_CASE("killed mid-row: the torn row is dropped and the commit restores it", "[loop][resume]") {
  auto rows = crash_then_resume("committed", 3, true);
  REQUIRE(rows.size() == 5);
  CHECK(rows[2].latency_us == Approx(80));
  CHECK(rows[2].kept);
}

TEST_CASE("a damaged row in the middle of results.tsv is moved aside at the start, and the rows after it are kept", "[loop][resume]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir);
  {
    ScriptedProposer pr;
    pr.add(95, "first");
    pr.add(90, "second");
    cfg.run.max_experiments = 3;
    RunLoop loop(cfg, ev, pr, clock);
    REQUIRE(loop.run().ok());
  }
  const std::string table = cfg.run_dir() + "/results.tsv";
  std::string text = read_file(table);
  const size_t row2 = text.find("\n2\t") + 1;
  text.replace(row2, text.find('\n', row2) - row2, "2\trmsnorm\tdamaged by hand");
  std::ofstream(table, std::ios::trunc) << text;
  ScriptedProposer pr;
  pr.add(80, "third");
  cfg.run.max_experiments = 0;
  RunLoop loop(cfg, ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].experiment == 1);
  CHECK(rows[1].experiment == 3);
  CHECK(rows[1].description == "second");
  CHECK(rows[2].experiment == 4);
  CHECK(read_file(cfg.run_dir() + "/results.damaged.tsv") == "2\trmsnorm\tdamaged by hand\n");
}

TEST_CASE("the daemon's start refuses a state.json of the wrong shape, naming the file and the field", "[loop][resume]") {
  for (auto [state, field] : {std::pair{"{\"llm_cost_usd\": \"12\"}", "llm_cost_usd is a string"},
                              {"{\"wall_seconds\": [1]}", "wall_seconds is an array"},
                              {"{\"kernels\": [1]}", "kernels[0] is a number: expected an object"},
                              {"[]", "is an array, not a run's state"}}) {
    INFO(state);
    TempDir dir;
    ScriptedEvaluator ev;
    ManualClock clock;
    auto cfg = loop_config(dir);
    {
      ScriptedProposer pr;
      cfg.run.max_experiments = 1;
      RunLoop loop(cfg, ev, pr, clock);
      REQUIRE(loop.run().ok());
    }
    std::ofstream(cfg.run_dir() + "/state.json", std::ios::trunc) << state;
    ScriptedProposer pr;
    cfg.run.max_experiments = 0;
    RunLoop loop(cfg, ev, pr, clock);
    auto out = loop.run();
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.error().message, Catch::Contains(cfg.run_dir() + "/state.json: ") && Catch::Contains(field));
  }
}

TEST_CASE("a second daemon on the same run folder is refused, naming the first", "[loop]") {
  TempDir dir;
  auto cfg = loop_config(dir);
  RunDirectory first(cfg.run_dir());
  REQUIRE(first.create().ok());
  REQUIRE(first.lock().ok());
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  // flock is per open file: a second RunDirectory in this process conflicts like another daemon.
  RunLoop loop(cfg, ev, pr, clock);
  auto out = loop.run();
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.error().message, Catch::Contains("another autokernel (pid " + std::to_string(getpid()) + ")"));
}

TEST_CASE("SIGHUP reloads the budgets from the config file between experiments", "[loop]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  for (int i = 0; i < 10; ++i) pr.add(99 - i, "step");
  auto cfg = loop_config(dir);
  const std::string file = dir.write("run.toml", "[run]\nname = \"t\"\nworkdir = \"" + dir.path.string() +
                                                     "\"\nmax_experiments = 3\n[[kernel]]\ntype = \"rmsnorm\"\nshape = [1024, 1024]\n");
  std::atomic<bool> reload{false};
  RunLoop loop(cfg, ev, pr, clock, LoopSignals{nullptr, &reload});
  bool reloaded = false;
  loop.on_reload = [&](const Config&) { reloaded = true; };
  loop.crash_point = [&](const std::string& p) {
    if (p == "recorded") reload = true;   // as if SIGHUP arrived during the first experiment
  };
  auto out = loop.run();
  REQUIRE(out.ok());
  CHECK(reloaded);
  CHECK(out->kind == RunOutcome::BudgetSpent);
  CHECK(rows_of(loop).size() == 3);
  (void)file;
}

TEST_CASE("a stop request ends the run before the next experiment, with the state written", "[loop]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  for (int i = 0; i < 5; ++i) pr.add(90 - i, "step");
  std::atomic<bool> stop{false};
  RunLoop loop(loop_config(dir), ev, pr, clock, LoopSignals{&stop, nullptr});
  loop.crash_point = [&](const std::string& p) {
    if (p == "recorded") stop = true;
  };
  auto out = loop.run();
  REQUIRE(out.ok());
  CHECK(out->kind == RunOutcome::Stopped);
  CHECK(rows_of(loop).size() == 1);
  CHECK_THAT(read_file_text(loop.directory().state()).value_or(""), Catch::Contains("\"status\": \"stopped\""));
}

TEST_CASE("a best judged again after another GPU replaced it changes neither the best nor the reverts", "[loop][best]") {
  TempDir dir;
  const Config cfg = loop_config(dir);
  auto ks = initial_progress(cfg);
  auto row = [](long long n, bool kept, double us, const std::string& correctness, MoveKind move = MoveKind::Edit) {
    ResultRow r{n, "rmsnorm", "rmsnorm", 1, us, 0.5, 1, correctness, 0, kept, "", 0, 1, "d"};
    r.move = move;
    return r;
  };
  apply_row(ks, row(1, true, 100, "PASS", MoveKind::Baseline));
  apply_row(ks, row(2, true, 80, "PASS"));
  apply_row(ks, row(3, false, 90, "PASS"));
  apply_row(ks, row(4, false, 0, kBestReplaced));
  CHECK(ks[0].best_us == Approx(80));
  CHECK(ks[0].consecutive_reverts == 1);
  std::vector<ResultRow> rows{row(1, true, 100, "PASS", MoveKind::Baseline), row(2, true, 80, "PASS"), row(4, false, 0, kBestReplaced)};
  CHECK(standing_bests(rows, "rmsnorm").size() == 2);
}

TEST_CASE("a compile error or an unusable reply is not a revert, and broken proposals in a row have their own cap", "[loop][convergence]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(120, "slower");
  for (int i = 0; i < 10; ++i) pr.queue.push_back({"// COMPILE\n", "a typo " + std::to_string(i), 0, 0});
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 2\nmax_broken_in_a_row = 3\n"), ev, pr, clock);
  auto out = loop.run();
  REQUIRE(out.ok());
  CHECK(rows_of(loop).size() == 5);   // the baseline, one slower file, three that did not compile
  const KernelProgress& k = loop.kernels()[0];
  CHECK(k.consecutive_reverts == 1);
  CHECK(k.broken_in_a_row == 3);
  CHECK_THAT(*converged(k, loop_config(dir, "[convergence]\nmax_consecutive_reverts = 2\nmax_broken_in_a_row = 3\n").convergence),
             Catch::StartsWith("3 broken proposals in a row"));
  // The model was told its budget: the last prompt counted the broken ones apart.
  REQUIRE(pr.seen.size() == 4);
  CHECK(pr.seen[3].budget.broken_in_a_row == 2);
  CHECK(pr.seen[3].budget.reverts_in_a_row == 1);
  CHECK(pr.seen[3].budget.max_broken == 3);
}

TEST_CASE("a proposal's predicted time is stored in its row and shown to the next proposal beside the measurement", "[loop][plan]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(90, "faster");
  pr.queue.back().predicted_us = 85;
  pr.queue.back().scratchpad = std::string("try: more of the same");
  pr.queue.back().keeps_notes = true;
  pr.queue.back().show_variant = "row_in_registers";
  pr.add(95, "after it");
  RunLoop loop(loop_config(dir, "max_experiments = 3\n"), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].predicted_us == Approx(85));
  REQUIRE(pr.seen.size() >= 2);
  CHECK(pr.seen[1].history.back().predicted_us == Approx(85));
  CHECK(pr.seen[1].scratchpad == "try: more of the same");
  CHECK(pr.seen[1].shown_variant == "row_in_registers");   // asked for, so shown in this prompt
  // The notes are in the run folder: a restart keeps them.
  auto notes = read_model_notes(loop.directory().root(), "rmsnorm");
  REQUIRE(notes.ok());
  CHECK(notes->scratchpad == "try: more of the same");
}

namespace {

/// ScriptedEvaluator that names the device and the peak, as the harness's verdicts do.
class NamingEvaluator : public ScriptedEvaluator {
 public:
  Result<Verdict> evaluate(const EvalRequest& req) override {
    auto v = ScriptedEvaluator::evaluate(req);
    if (v) v->gpu = "NVIDIA H100 80GB HBM3", v->arch = "sm_90a", v->peak_used = 3000;
    return v;
  }
};

}  // namespace

TEST_CASE("the device's name, arch, unit and peak are known before a restarted run's first verdict", "[loop][facts]") {
  TempDir dir;
  ManualClock clock;
  {
    NamingEvaluator ev;
    ScriptedProposer pr;
    RunLoop loop(loop_config(dir, "max_experiments = 1\n"), ev, pr, clock);
    REQUIRE(loop.run().ok());
  }
  NamingEvaluator ev;
  ScriptedProposer pr;
  pr.add(90, "faster");
  RunLoop again(loop_config(dir, "max_experiments = 2\n"), ev, pr, clock);
  REQUIRE(again.run().ok());
  REQUIRE(pr.seen.size() == 1);   // asked before this process had any verdict
  CHECK(pr.seen[0].gpu == "NVIDIA H100 80GB HBM3");
  CHECK(pr.seen[0].arch == "sm_90a");
  CHECK(pr.seen[0].throughput_unit == "GB/s");
  CHECK(pr.seen[0].peak == Approx(3000));
}

TEST_CASE("a kernel not yet judged takes the peak of its resource from another kernel on the same GPU, never another unit's", "[loop][facts]") {
  TempDir dir;
  const Config cfg = loop_config(dir, "", "[[kernel]]\ntype = \"rmsnorm\"\nshape = [1024, 1024]\nweight = 0.3\n[[kernel]]\ntype = \"softmax\"\nshape = [1024, 1024]\nweight = 0.3\n"
                                         "[[kernel]]\ntype = \"matmul\"\nshape = [1024, 1024, 1024]\nweight = 0.3\n");
  std::vector<KernelProgress> kernels = initial_progress(cfg);
  kernels[0].gpu = "NVIDIA H100 80GB HBM3";
  kernels[0].arch = "sm_90a";
  kernels[0].unit = "GB/s";
  kernels[0].peak = 3000;
  const DeviceFacts softmax = device_facts(kernels, 1, {"NVIDIA H100 80GB HBM3"});
  CHECK(softmax.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(softmax.unit == "GB/s");
  CHECK(softmax.peak == Approx(3000));
  const DeviceFacts matmul = device_facts(kernels, 2, {"NVIDIA H100 80GB HBM3"});
  CHECK(matmul.unit == "TFLOPS");
  CHECK(matmul.peak == 0);   // a bandwidth is no peak of a compute-bound kernel
  const DeviceFacts alone = device_facts(initial_progress(cfg), 2, {"NVIDIA H200"});
  CHECK(alone.gpu == "NVIDIA H200");   // the driver's name, before any verdict
}

TEST_CASE("before any verdict of the run, the peak is the one the harness cached for a GPU of that name", "[loop][facts]") {
  TempDir dir;
  const char* old = std::getenv("AUTOKERNEL_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("AUTOKERNEL_CACHE_DIR", dir.path.string().c_str(), 1);
  dir.write("peaks-NVIDIA_H100_80GB_HBM3-132sm-81559MiB.json", "{\"bandwidth_gbps\": 3001.5, \"compute_tflops\": 620.0}");
  CHECK(cached_peak("NVIDIA H100 80GB HBM3", "GB/s") == Approx(3001.5));
  CHECK(cached_peak("NVIDIA H100 80GB HBM3", "TFLOPS") == Approx(620));
  CHECK(cached_peak("NVIDIA H200", "GB/s") == 0);
  dir.write("peaks-NVIDIA_H100-132sm-81559MiB.json", "{\"bandwidth_gbps\": 1}");
  CHECK(cached_peak("NVIDIA H100", "GB/s") == Approx(1));   // not the 80GB HBM3 file
  const Config cfg = loop_config(dir);
  const DeviceFacts f = device_facts(initial_progress(cfg), 0, {"NVIDIA H100 80GB HBM3"});
  CHECK(f.peak == Approx(3001.5));
  dir.write("peaks-NVIDIA_H100_80GB_HBM3-114sm-81559MiB.json", "{\"bandwidth_gbps\": 2000}");
  CHECK(cached_peak("NVIDIA H100 80GB HBM3", "GB/s") == 0);   // two cards of that name: neither is known to be this one
  if (old) setenv("AUTOKERNEL_CACHE_DIR", saved.c_str(), 1);
  else unsetenv("AUTOKERNEL_CACHE_DIR");
}
