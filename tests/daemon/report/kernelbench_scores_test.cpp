// The report's KernelBench section: per problem correctness under both tolerances and speedups
// against PyTorch eager and torch.compile, and fast_p (docs/user-types.md, "The report").
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/atomic_write.hpp"
#include "daemon/loop/run_loop.hpp"
#include "daemon/report/kernelbench_scores.hpp"
#include "daemon/report/run_report.hpp"
#include "daemon/run_folder/kernel_progress.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "daemon/run_folder/run_directory.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"

using namespace ak;
using namespace ak::test;

namespace {

/// A run folder written as the daemon writes one: results.tsv through the results table, each
/// judged row's verdict beside its experiment.
struct FixtureRun {
  TempDir dir;
  std::string run;
  long long next = 1;

  /// The run folder at `folder` inside the temporary one ("runs/kb": as `kernelbench`'s config names it).
  explicit FixtureRun(const std::string& folder = "kb") : run((dir.path / folder).string()) {
    std::filesystem::create_directories(run + "/experiments");
    REQUIRE(open_results(run + "/results.tsv").ok());   // the table with its header
  }

  /// A row of `tag`; with a verdict, its file is written (none: a file lost).
  void add(const std::string& tag, const std::string& correctness, double us, bool kept, MoveKind move,
           const std::optional<Verdict>& v, const std::string& type = "") {
    ResultRow r{next, tag, type.empty() ? tag : type, 0, us, 0, 1, correctness, 0, kept, kept ? "c0ffee" : "", 0, 1, "a step"};
    r.move = move;
    REQUIRE(append_result(run + "/results.tsv", r).ok());
    if (v) {
      char name[64];
      std::snprintf(name, sizeof name, "/experiments/%04lld-%s.verdict.json", next, tag.c_str());
      REQUIRE(write_file_atomic(run + name, nlohmann::json(*v).dump(2)).ok());
    }
    ++next;
  }
};

/// A user type's verdict: PyTorch eager and torch.compile timed beside the candidate.
Verdict verdict(Correctness c, double us, std::optional<bool> kernelbench, double eager = 0, double compile = 0) {
  Verdict v;
  v.correctness = c;
  if (us > 0) v.timing = Timing{100, us, us, us, us, us};
  v.kernelbench_pass = kernelbench;
  v.reference_us = eager;
  v.torch_compile_us = compile;
  v.baseline_source = eager > 0 ? "PyTorch eager" : "unavailable";
  return v;
}

/// Four problems beside a built-in kernel (see the test's comments for each).
void four_problems(FixtureRun& f) {
  const auto Pass = Correctness::Pass, Fail = Correctness::Fail;
  f.add("rmsnorm", "PASS", 90, true, MoveKind::Baseline, std::nullopt);   // built in: not a problem, no verdict needed
  // kb_fast: 2.5x eager once its best is timed again at 60 us, but slower than torch.compile (40 us).
  f.add("kb_fast", "PASS", 100, true, MoveKind::Baseline, verdict(Pass, 100, true, 150, 40));
  f.add("kb_fast", "PASS", 50, true, MoveKind::Edit, verdict(Pass, 50, true, 150, 40));
  f.add("kb_fast", kBestJudgedAgain, 60, false, MoveKind::Edit, std::nullopt);
  // kb_loose: no file passes our tolerance; one is within KernelBench's at 20 us (2.5x eager,
  // 2.25x compile); a SUSPECT one within it too, whose 1 us is not trusted.
  f.add("kb_loose", "FAIL", 0, false, MoveKind::Baseline, verdict(Fail, 0, false));
  f.add("kb_loose", "FAIL", 0, false, MoveKind::Edit, verdict(Fail, 20, true, 50, 45));
  f.add("kb_loose", "SUSPECT", 1, false, MoveKind::Edit, verdict(Correctness::Suspect, 1, true, 50, 45));
  // kb_nocompile: exactly 2x eager (not more than 2), torch.compile never measured.
  f.add("kb_nocompile", "PASS", 80, true, MoveKind::Baseline, verdict(Pass, 80, true, 120, 0));
  f.add("kb_nocompile", "PASS", 60, true, MoveKind::Edit, verdict(Pass, 60, true, 120, 0));
  // kb_wrong: never correct; one verdict file lost, and a row the daemon wrote alone (no verdict).
  f.add("kb_wrong", "COMPILE_ERROR", 0, false, MoveKind::Baseline, verdict(Correctness::CompileError, 0, std::nullopt));
  f.add("kb_wrong", "FAIL", 0, false, MoveKind::Edit, std::nullopt);
  f.add("kb_wrong", "NO_PROPOSAL", 0, false, MoveKind::Edit, std::nullopt);
}

}  // namespace

TEST_CASE("kernelbench scores: per problem correctness under both tolerances, and fast_p against eager and torch.compile",
          "[report][kernelbench]") {
  FixtureRun f;
  four_problems(f);
  auto rows = read_results(f.run + "/results.tsv");
  REQUIRE(rows.ok());
  const RunVerdicts verdicts = read_user_type_verdicts(f.run, *rows);
  REQUIRE(verdicts.unreadable == std::vector<std::string>{"experiments/0011-kb_wrong.verdict.json (missing)"});
  const KernelBenchScores s = kernelbench_scores(*rows, verdicts);
  REQUIRE(s.problems.size() == 4);
  const ProblemScore &fast = s.problems[0], &loose = s.problems[1], &nocompile = s.problems[2], &wrong = s.problems[3];
  CHECK(fast.tag == "kb_fast");
  CHECK((fast.correct && fast.kernelbench_correct));
  CHECK(fast.best_us == 60);   // the best timed again
  CHECK(fast.speedup_eager() == Approx(2.5));
  CHECK(fast.speedup_compile() == Approx(40.0 / 60));
  CHECK_FALSE(loose.correct);
  CHECK(loose.kernelbench_correct);
  CHECK(loose.kernelbench_us == 20);   // not the SUSPECT 1 us
  CHECK(loose.eager_us == 50);
  CHECK(nocompile.compile_us == 0);
  CHECK(nocompile.speedup_eager() == Approx(2.0));
  CHECK_FALSE((wrong.correct || wrong.kernelbench_correct));
  CHECK(s.without_compile == 2);   // kb_nocompile, and kb_wrong with no time at all
  CHECK(s.without_eager == 1);

  REQUIRE(s.fast_p.size() == 4);
  struct Expected { double p; int eager, kb_eager, compile, kb_compile; };
  // p = 0 is correctness alone: kb_nocompile counts against torch.compile though it was never timed.
  for (const Expected e : {Expected{0, 2, 3, 2, 3}, Expected{1, 2, 3, 0, 1}, Expected{1.5, 2, 3, 0, 1}, Expected{2, 1, 2, 0, 1}}) {
    INFO("p = " << e.p);
    const auto it = std::find_if(s.fast_p.begin(), s.fast_p.end(), [&](const FastP& x) { return x.p == e.p; });
    REQUIRE(it != s.fast_p.end());
    CHECK(it->eager == e.eager);
    CHECK(it->kernelbench_eager == e.kb_eager);
    CHECK(it->compile == e.compile);
    CHECK(it->kernelbench_compile == e.kb_compile);
  }
}

TEST_CASE("a best demoted after a failed judgement is not scored: the best before it is", "[report][kernelbench]") {
  FixtureRun f;
  f.add("kb_demote", "PASS", 100, true, MoveKind::Baseline, verdict(Correctness::Pass, 100, true, 200, 150));
  f.add("kb_demote", "PASS", 10, true, MoveKind::Edit, verdict(Correctness::Pass, 10, true, 200, 150));
  f.add("kb_demote", kBestDemoted, 100, true, MoveKind::Edit, std::nullopt);
  auto rows = read_results(f.run + "/results.tsv");
  REQUIRE(rows.ok());
  const KernelBenchScores s = kernelbench_scores(*rows, read_user_type_verdicts(f.run, *rows));
  REQUIRE(s.problems.size() == 1);
  CHECK(s.problems[0].best_us == 100);
  CHECK(s.problems[0].speedup_eager() == Approx(2.0));
  CHECK(s.fast_p[3].eager == 0);   // 2x is not more than 2x
  CHECK(s.fast_p[1].compile == 1);
}

TEST_CASE("report has a KernelBench section with fast_p and names the verdict files it could not read", "[report][kernelbench]") {
  FixtureRun f;
  four_problems(f);
  auto r = run_autokernel("report --run " + f.run);
  REQUIRE(r.exit_code == 0);
  const std::string report = read_file(f.run + "/report.md");
  const size_t at = report.find("\n## KernelBench\n");
  REQUIRE(at != std::string::npos);
  const std::string md = report.substr(at);
  CHECK_THAT(md, Catch::Contains("| kb\\_fast | yes | yes | 60.00 | 150.00 | 40.00 | 2.500x | 0.667x |"));
  CHECK_THAT(md, Catch::Contains("| kb\\_loose | no | yes | 20.00 † | 50.00 | 45.00 | 2.500x | 2.250x |"));
  CHECK_THAT(md, Catch::Contains("| kb\\_nocompile | yes | yes | 60.00 | 120.00 | — | 2.000x | — |"));
  CHECK_THAT(md, Catch::Contains("| kb\\_wrong | no | no | — | — | — | — | — |"));
  CHECK_THAT(md, Catch::Contains("| 0 | 2/4 (50%) | 3/4 (75%) | 2/4 (50%) | 3/4 (75%) |"));
  CHECK_THAT(md, Catch::Contains("| 1 | 2/4 (50%) | 3/4 (75%) | 0/4 (0%) | 1/4 (25%) |"));
  CHECK_THAT(md, Catch::Contains("| 1.5 | 2/4 (50%) | 3/4 (75%) | 0/4 (0%) | 1/4 (25%) |"));
  CHECK_THAT(md, Catch::Contains("| 2 | 1/4 (25%) | 2/4 (50%) | 0/4 (0%) | 1/4 (25%) |"));
  CHECK_THAT(md, Catch::Contains("2 of the 4 problems have no torch.compile time"));
  CHECK_THAT(md, Catch::Contains("- experiments/0011-kb\\_wrong.verdict.json (missing)"));
  CHECK(md.find("| rmsnorm |") == std::string::npos);
}

TEST_CASE("problems kernelbench refused count in every denominator as not correct", "[report][kernelbench]") {
  FixtureRun f;
  four_problems(f);
  const std::string refused = f.dir.write("kb.refused.tsv", "file\treason\nlevel1/93_masked_cumsum.py\tinput mask is a bool "
                                                              "tensor\nlevel2/66_Matmul_Dropout_Softmax.py\tforward draws random numbers\n");
  auto problems = read_kernelbench_refusals(refused);
  REQUIRE(problems.ok());
  REQUIRE(problems->size() == 2);
  CHECK((*problems)[0].file == "level1/93_masked_cumsum.py");
  CHECK((*problems)[1].reason == "forward draws random numbers");
  auto rows = read_results(f.run + "/results.tsv");
  REQUIRE(rows.ok());
  const KernelBenchScores s = kernelbench_scores(*rows, read_user_type_verdicts(f.run, *rows), *problems);
  CHECK(s.total() == 6);
  CHECK(s.fast_p[0].eager == 2);   // the refused add nothing to the numerators

  auto r = run_autokernel("report --run " + f.run + " --refused " + refused);
  REQUIRE(r.exit_code == 0);
  const std::string md = read_file(f.run + "/report.md");
  CHECK_THAT(md, Catch::Contains("| 93\\_masked\\_cumsum.py (refused: input mask is a bool tensor) | no | no | — | — | — | — | — |"));
  CHECK_THAT(md, Catch::Contains("2 problems refused by `kernelbench`"));
  CHECK_THAT(md, Catch::Contains("| 0 | 2/6 (33%) | 3/6 (50%) | 2/6 (33%) | 3/6 (50%) |"));
  CHECK_THAT(md, Catch::Contains("| 1 | 2/6 (33%) | 3/6 (50%) | 0/6 (0%) | 1/6 (17%) |"));

  const std::string broken = f.dir.write("broken.tsv", "file\treason\njust one column\n");
  auto bad = run_autokernel("report --run " + f.run + " --refused " + broken);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.out, Catch::Contains("broken.tsv line 2: expected \"file<TAB>reason\""));
}

TEST_CASE("the refusals are found beside the config kernelbench wrote, whose run is runs/<its stem>", "[report][kernelbench]") {
  CHECK(default_refusals_path("/work/kb/runs/level1") == "/work/kb/level1.refused.tsv");
  CHECK(default_refusals_path("/work/kb/runs/level1/") == "/work/kb/level1.refused.tsv");
}

TEST_CASE("a run of built-in types only has no KernelBench section", "[report][kernelbench]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(90, "faster");
  auto cfg = loop_config(dir);
  RunLoop loop(cfg, ev, pr, clock);
  REQUIRE(loop.run().ok());
  REQUIRE(run_autokernel("report --run " + cfg.run_dir()).exit_code == 0);
  const std::string md = read_file(cfg.run_dir() + "/report.md");
  CHECK_THAT(md, Catch::Contains("## Verdicts"));
  CHECK(md.find("KernelBench") == std::string::npos);
}

TEST_CASE("a user type's run through the loop is scored from the verdict files the loop wrote", "[report][kernelbench][user_type]") {
  TempDir dir;
  std::string spec = kGeluSpec;
  spec.replace(spec.find("gelu_tanh\""), 10, "gelu_report\"");
  dir.write("gelu_tanh.py", kGeluReference);
  dir.write("gelu_report.toml", spec);
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(120, "a plain first file");
  pr.add(100, "faster");
  RunLoop loop(loop_config(dir, "", "[[kernel]]\nspec = \"gelu_report.toml\"\nshape = [64, 4096]\n"), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = read_results(loop.directory().results());
  REQUIRE(rows.ok());
  const RunVerdicts verdicts = read_user_type_verdicts(loop.directory().root(), *rows);
  CHECK(verdicts.unreadable.empty());
  CHECK(verdicts.by_experiment.size() == rows->size());
  const KernelBenchScores s = kernelbench_scores(*rows, verdicts);
  REQUIRE(s.problems.size() == 1);
  CHECK(s.problems[0].tag == "gelu_report");
  CHECK(s.problems[0].correct);
  CHECK(s.problems[0].best_us == 100);
}

TEST_CASE("a problem run as a built-in type is scored as the problem, with its module's PyTorch times", "[report][kernelbench]") {
  FixtureRun f("runs/l1");
  // softmax (23_Softmax): the starter at 100 us, a variant kept at 80 us; eager 120 us, torch.compile 90 us.
  f.add("softmax", "PASS", 100, true, MoveKind::Baseline, std::nullopt);
  f.add("softmax", "PASS", 80, true, MoveKind::Structure, std::nullopt);
  f.add("softmax", "PASS", 95, false, MoveKind::Edit, std::nullopt);
  // cross_entropy: its starter failed, nothing stands.
  f.add("cross_entropy", "FAIL", 0, false, MoveKind::Baseline, std::nullopt);
  // a kernel of a built-in type that no problem links: not a problem.
  f.add("rmsnorm", "PASS", 50, true, MoveKind::Baseline, std::nullopt);
  // layernorm was linked but the run never reached it.
  const std::vector<BuiltinProblem> links{
      {"softmax", "softmax", {4096, 393216}, "fp32", "level1/23_Softmax.py", "types/kb_23_softmax.toml", "x=x; y=out"},
      {"cross_entropy", "cross_entropy", {32768, 4096}, "fp32", "level1/95_CrossEntropyLoss.py", "types/kb_95.toml", "mean=out"},
      {"layernorm", "layernorm", {16, 4194304}, "fp32", "level1/40_LayerNorm.py", "types/kb_40.toml", "x=x"}};
  const std::vector<ProblemBaseline> times{{"softmax", 120, 90, ""}, {"cross_entropy", 300, 200, ""}};
  auto rows = read_results(f.run + "/results.tsv");
  REQUIRE(rows.ok());
  const KernelBenchScores s = kernelbench_scores(*rows, read_user_type_verdicts(f.run, *rows), {}, links, times);
  REQUIRE(s.problems.size() == 3);
  const ProblemScore &softmax = s.problems[0], &ce = s.problems[1], &ln = s.problems[2];
  CHECK(softmax.builtin_problem == "level1/23_Softmax.py");
  CHECK((softmax.correct && softmax.kernelbench_correct));   // softmax's fp32 1e-5 is within KernelBench's 1e-4
  CHECK(softmax.best_us == 80);
  CHECK(softmax.speedup_eager() == Approx(1.5));
  CHECK(softmax.speedup_compile() == Approx(90.0 / 80));
  CHECK_FALSE((ce.correct || ce.kernelbench_correct));
  CHECK(ce.eager_us == 300);
  CHECK_FALSE(ln.correct);
  CHECK(ln.eager_us == 0);
  CHECK(s.without_eager == 1);
  CHECK(s.fast_p[1].eager == 1);
  CHECK(s.fast_p[1].compile == 1);
  CHECK(s.fast_p[1].kernelbench_compile == 1);
  CHECK(s.fast_p[2].compile == 0);   // 1.125x is not more than 1.5x

  // KernelBench's correctness follows from ours only where the type's tolerance is no looser than theirs.
  CHECK(builtin_tolerance_within_kernelbench("softmax", "fp32"));
  CHECK(builtin_tolerance_within_kernelbench("reduce", "fp32"));
  CHECK_FALSE(builtin_tolerance_within_kernelbench("reduce", "bf16"));   // 2e-2 against KernelBench's 1e-2
  CHECK_FALSE(builtin_tolerance_within_kernelbench("kb_gelu", "fp32"));

  SECTION("report finds the links and the times beside the config and scores them") {
    f.dir.write("l1.builtin.tsv", builtin_problems_text(links));
    f.dir.write("l1.baselines.tsv", problem_baselines_text(times));
    f.dir.write("l1.refused.tsv", "file\treason\nlevel1/1_Square_matrix_multiplication_.py\tneeds an LLM: its kind is gemm\n");
    auto r = run_autokernel("report --run " + f.run);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    const std::string report = read_file(f.run + "/report.md");
    const size_t at = report.find("\n## KernelBench\n");
    REQUIRE(at != std::string::npos);
    const std::string md = report.substr(at);
    CHECK_THAT(md, Catch::Contains("| softmax ‡ 23\\_Softmax.py | yes | yes | 80.00 | 120.00 | 90.00 | 1.500x | 1.125x |"));
    CHECK_THAT(md, Catch::Contains("| cross\\_entropy ‡ 95\\_CrossEntropyLoss.py | no | no | — | 300.00 | 200.00 | — | — |"));
    CHECK_THAT(md, Catch::Contains("| 1 | 1/4 (25%) | 1/4 (25%) | 1/4 (25%) | 1/4 (25%) |"));
    CHECK_THAT(md, Catch::Contains("A problem that computes a built-in type runs as that type"));
    CHECK_THAT(md, Catch::Contains("1 problem refused by `kernelbench`"));
    CHECK_THAT(md, Catch::Contains("1 of them left out as needing an LLM (`--offline`), count below as not correct."));
    CHECK(md.find("| rmsnorm") == std::string::npos);
  }
}
