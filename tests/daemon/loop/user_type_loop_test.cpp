// A user type in the loop: its prompt, and its first file when the spec names no starter
// (docs/user-types.md, "The first candidate").
#include <catch2/catch.hpp>

#include "daemon/loop/run_loop.hpp"
#include "daemon/proposers/llm_proposer.hpp"
#include "daemon/run_folder/kernel_progress.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "llm/prompt_template.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"

using namespace ak;
using namespace ak::test;

namespace {

/// Writes the GELU type as `name` into dir (with a starter when one is given); returns the
/// [[kernel]] entry of a config beside it.
std::string gelu_kernel(const TempDir& dir, const std::string& name, const std::string& starter = "") {
  std::string t = kGeluSpec;
  t.replace(t.find("gelu_tanh\""), 10, name + "\"");
  if (!starter.empty()) {
    dir.write(name + ".cu", starter);
    t.replace(t.find("dims ="), 6, "starter = \"" + name + ".cu\"\ndims =");
  }
  dir.write("gelu_tanh.py", kGeluReference);
  dir.write(name + ".toml", t);
  return "[[kernel]]\nspec = \"" + name + ".toml\"\nshape = [64, 4096]\n";
}

}  // namespace

TEST_CASE("without a starter the LLM writes the first file, asked again while it fails", "[loop][user_type]") {
  for (int slow : {0, 1}) {
    INFO("proposer concurrency " << slow);
    TempDir dir;
    ScriptedEvaluator ev;
    ScriptedProposer pr;
    pr.slow = slow;
    ManualClock clock;
    pr.add_failing("a first try");
    pr.add_failing("a second try");
    pr.add(120, "a plain first file");
    pr.add(100, "faster");
    RunLoop loop(loop_config(dir, "", gelu_kernel(dir, "gelu_first_" + std::to_string(slow))), ev, pr, clock);
    auto out = loop.run();
    REQUIRE(out.ok());
    auto rows = rows_of(loop);
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].description == "first file, not passing: a first try");
    CHECK_FALSE(rows[0].kept);
    CHECK(rows[0].move == MoveKind::Baseline);
    CHECK_FALSE(rows[1].kept);
    CHECK(rows[2].kept);
    CHECK(rows[2].description == "baseline: the starter; speedups against the starter (the LLM's first passing file)");
    CHECK(rows[2].speedup == Approx(1.0));
    CHECK(rows[3].kept);
    CHECK(rows[3].speedup == Approx(1.2));
    REQUIRE(pr.seen.size() >= 4);
    CHECK(pr.seen[0].first_file);
    CHECK(pr.seen[0].best_source.empty());
    CHECK(pr.seen[2].first_file);
    CHECK_FALSE(pr.seen[3].first_file);
    CHECK(pr.seen[3].best_source == "// us=120.000000\na plain first file\n");
    CHECK(loop.kernels()[0].first_tries == 2);
  }
}

TEST_CASE("a kernel whose first files all fail ends after its budget of tries, also across a restart", "[loop][user_type]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ManualClock clock;
  const std::string kernel = gelu_kernel(dir, "gelu_budget");
  {
    ScriptedProposer pr;
    for (int i = 0; i < 10; ++i) pr.add_failing("try " + std::to_string(i));
    RunLoop loop(loop_config(dir, "[convergence]\nfirst_candidate_tries = 3\n", kernel), ev, pr, clock);
    auto out = loop.run();
    REQUIRE(out.ok());
    CHECK(rows_of(loop).size() == 3);
    CHECK(pr.queue.size() == 7);
    CHECK_THAT(out->summary, Catch::Contains("no first file of the LLM passed in 3 tries (the last: FAIL: shape sweep: wrong output"));
  }
  ScriptedProposer again;
  again.add(100, "would pass");
  RunLoop loop(loop_config(dir, "[convergence]\nfirst_candidate_tries = 3\n", kernel), ev, again, clock);
  REQUIRE(loop.run().ok());
  CHECK(again.seen.empty());   // the tries were spent before the restart
  CHECK(rows_of(loop).size() == 3);
}

TEST_CASE("a user type's starter file is its baseline, as a built-in type's is", "[loop][user_type]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  pr.add(50, "faster");
  RunLoop loop(loop_config(dir, "", gelu_kernel(dir, "gelu_with_starter", "// us=80\n// the user's starter\n")), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].kept);
  CHECK(rows[0].latency_us == Approx(80));
  CHECK(rows[0].description == "baseline: the starter; speedups against the starter");
  CHECK_FALSE(pr.seen.at(0).first_file);
}

TEST_CASE("a user type's speedups are against its module in PyTorch eager, as the harness timed it", "[loop][user_type]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  ev.baseline_source = "PyTorch eager";
  ev.reference_us = 180;
  pr.add(120, "a first file");
  pr.add(100, "faster");
  RunLoop loop(loop_config(dir, "", gelu_kernel(dir, "gelu_eager")), ev, pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].description == "baseline: the starter; speedups against PyTorch eager");
  CHECK(rows[0].speedup == Approx(1.5));
  CHECK(rows[1].speedup == Approx(1.8));
  CHECK(loop.kernels()[0].baseline_us == Approx(180));
  CHECK(loop.kernels()[0].baseline_source == "PyTorch eager");
}

TEST_CASE("run refuses a user type with neither a starter nor an LLM", "[loop][user_type]") {
  TempDir dir;
  const Config builtin = loop_config(dir, "", gelu_kernel(dir, "gelu_no_llm"));
  auto why = first_file_missing(builtin);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("run.toml:4: [[kernel]] of user type \"gelu_no_llm\"") &&
                       Catch::Contains("a user type needs an LLM or a starter file (starter = \"path.cu\" in its spec)"));
  CHECK_FALSE(first_file_missing(loop_config(dir, "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9\"\n",
                                             gelu_kernel(dir, "gelu_no_llm"))));
  CHECK_FALSE(first_file_missing(loop_config(dir, "", gelu_kernel(dir, "gelu_has_starter", "// a starter\n"))));
  CHECK_FALSE(first_file_missing(loop_config(dir)));

  const std::string cfg = dir.write("cli.toml", "[run]\nworkdir = \"" + dir.path.string() + "\"\n" + gelu_kernel(dir, "gelu_no_llm"));
  RunOutput r = run_autokernel("run --config " + cfg);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("a user type needs an LLM or a starter file"));
}

TEST_CASE("a user type's prompt carries its reference, its tensors, its grid rule and its kind's notes", "[llm][user_type]") {
  TempDir dir;
  const Config cfg = loop_config(dir, "", gelu_kernel(dir, "gelu_prompt"));
  ProposalContext ctx;
  ctx.spec = find_spec("gelu_prompt");
  REQUIRE(ctx.spec);
  ctx.tag = "gelu_prompt";
  ctx.shape = cfg.kernels[0].shape;
  ctx.dtype = "fp32";
  ctx.first_file = true;
  auto q = build_chat_request(ctx, 8000);
  INFO((q ? "" : q.error().message));
  REQUIRE(q.ok());
  CHECK_THAT(q->system, Catch::Contains("gelu_prompt_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim)"));
  CHECK_THAT(q->system, Catch::Contains("ak_items_per_thread"));
  CHECK_THAT(q->user, Catch::Contains("a user type of kind elementwise"));
  CHECK_THAT(q->user, Catch::Contains("return torch.nn.functional.gelu(x, approximate=\"tanh\")"));
  CHECK_THAT(q->user, Catch::Contains("- x: input, const T*, [batch_size, dim] = [64x4096]"));
  CHECK_THAT(q->user, Catch::Contains("- out: output, T*, [batch_size, dim] = [64x4096]"));
  CHECK_THAT(q->user, Catch::Contains("- dim: int = 4096"));
  CHECK_THAT(q->user, Catch::Contains("grid = ceil(elements of out / (ak_block_threads * ak_items_per_thread))"));
  CHECK_THAT(q->user, Catch::Contains(*prompt_text("notes/kind-elementwise.txt")));
  CHECK_THAT(q->user, Catch::Contains("There is no kernel file yet") && Catch::Contains("```cuda\n```"));
  CHECK_THAT(q->user, Catch::Contains("You write the whole file"));
  CHECK_THAT(q->user, !Catch::Contains("The current best file"));

  ctx.first_file = false;
  ctx.best_source = "// the best so far\n";
  ctx.best_us = 42;
  auto next = build_chat_request(ctx, 8000);
  REQUIRE(next.ok());
  CHECK_THAT(next->user, Catch::Contains("The current best file runs in 42.00 us") && Catch::Contains("// the best so far"));
  CHECK_THAT(next->user, !Catch::Contains("There is no kernel file yet"));
  for (const std::string& kind : user_type_kinds()) CHECK(prompt_text("notes/kind-" + kind + ".txt") != nullptr);
}
