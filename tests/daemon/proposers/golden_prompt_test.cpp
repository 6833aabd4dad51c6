// Golden prompts: the message the model is sent at several states of a run, checked as text
// against tests/data/prompts/. The parts other files own (the header with the type's contract and
// shapes, the notes of prompts/notes/, the library's structures) are left out of the comparison;
// everything the daemon writes from the run's records is pinned. AK_UPDATE_GOLDEN=1 rewrites the
// files, to be read as a diff before they are committed.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "daemon/proposers/llm_proposer.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"

using namespace ak;
using namespace ak::test;

namespace {

const std::string kBest =
    "// the best so far\n#define AK_THREADS 256\n#define AK_VEC 1\n"
    "template <typename T> __global__ void rmsnorm_kernel(const T* x, T* y) {\n"
    "  const float inv = 1.0f;\n  y[0] = x[0] * inv;\n}\n";

/// The message from its "# Budget" on, with the notes and structures, which other files own, out.
std::string pinned_part(const std::string& user) {
  std::string m = user.substr(user.find("# Budget"));
  const size_t notes = m.find("# Notes");
  const size_t ideas = m.find("# Every idea tried");
  if (notes != std::string::npos && ideas != std::string::npos)
    m.replace(notes, ideas - notes, "[the notes of prompts/notes/ and the library's structures: not pinned here]\n");
  return m;
}

void check_golden(const std::string& name, const ProposalContext& ctx) {
  auto q = build_chat_request(ctx, 8000);
  INFO((q ? "" : q.error().message));
  REQUIRE(q.ok());
  const std::string got = pinned_part(q->user);
  const std::string path = std::string(AK_SOURCE_DIR) + "/tests/data/prompts/" + name + ".txt";
  if (std::getenv("AK_UPDATE_GOLDEN")) {
    std::ofstream(path) << got;
    WARN("rewrote " + path);
    return;
  }
  INFO(path);
  CHECK(read_file(path) == got);
}

PastExperiment baseline_row() {
  PastExperiment e;
  e.experiment = 1;
  e.description = "baseline: the starter; speedups against the starter";
  e.source = kBest;
  e.correctness = "PASS";
  e.latency_us = 120;
  e.kept = true;
  e.standing = true;
  e.move = MoveKind::Baseline;
  e.registers = 30;
  // Recorded readings of a memory-bound starter, as its verdict's counters pass gave them.
  HardwareCounters c;
  c.passes = 6;
  c.kernels = 1;
  c.dram_pct = 74.6, c.sm_pct = 28.3, c.achieved_occupancy_pct = 88.1, c.l1_hit_pct = 3.2, c.l2_hit_pct = 41.7;
  c.tensor_pct = 0, c.bank_conflicts = 0, c.bank_conflict_ratio = 0;
  c.stalls = {{"long_scoreboard", 0.58}, {"selected", 0.21}, {"barrier", 0.12}, {"not_selected", 0.09}};
  c.occupancy = OccupancyLimit{8, 100, "warps", 8, -1, 8, 32};
  e.counters = c;
  return e;
}

ProposalContext builtin_context() {
  ProposalContext ctx;
  ctx.spec = &rmsnorm_spec();
  ctx.experiment = 2;
  ctx.tag = "rmsnorm";
  ctx.shape = {8192, 8192};
  ctx.dtype = "fp16";
  ctx.best_source = kBest;
  ctx.best_us = 120;
  ctx.best_throughput = 2237.0;
  ctx.pct_peak = 0.745;
  ctx.baseline_us = 120;
  ctx.gpu = "NVIDIA H100 80GB HBM3";
  ctx.arch = "sm_90a";
  ctx.throughput_unit = "GB/s";
  ctx.peak = 3001;
  ctx.history = {baseline_row()};
  ctx.budget = {1, 0, 5, 0, 8, 0.9, 2.0, 0.01, 2.0};
  return ctx;
}

}  // namespace

TEST_CASE("golden prompt: a fresh kernel after its baseline", "[prompts][golden]") { check_golden("fresh", builtin_context()); }

TEST_CASE("golden prompt: after a compile error, its diff and its log", "[prompts][golden]") {
  ProposalContext ctx = builtin_context();
  PastExperiment e;
  e.experiment = 2;
  e.description = "16-byte loads";
  e.source = kBest;
  e.source.replace(e.source.find("AK_VEC 1"), 8, "AK_VEC 8");
  e.source.replace(e.source.find("const float inv"), 15, "const flaot inv");
  e.correctness = "COMPILE_ERROR";
  e.failure = "compile: 1 error";
  e.compile_log = "rmsnorm.cu(5): error: identifier \"flaot\" is undefined";
  e.predicted_us = 100;
  ctx.history.push_back(e);
  ctx.experiment = 3;
  ctx.budget.experiments = 2;
  ctx.budget.broken_in_a_row = 1;
  ctx.scratchpad = "try: 16-byte loads";
  check_golden("after-compile-error", ctx);
}

TEST_CASE("golden prompt: after a revert that lost only to noise", "[prompts][golden]") {
  ProposalContext ctx = builtin_context();
  PastExperiment e;
  e.experiment = 2;
  e.description = "two rows per block";
  e.source = kBest;
  e.correctness = "PASS";
  e.latency_us = 119.4;
  e.paired_ratio = 0.995;
  e.paired_noise = 0.012;
  e.registers = 32;
  e.smem_bytes = 1024;
  e.predicted_us = 110;
  ctx.history.push_back(e);
  ctx.experiment = 3;
  ctx.budget.experiments = 2;
  ctx.budget.reverts_in_a_row = 1;
  ctx.scratchpad = "avoid: nothing yet\ntry: 16-byte loads";
  ctx.shown_variant = "no_such_structure";
  check_golden("after-noisy-revert", ctx);
}

TEST_CASE("golden prompt: a user type's first file", "[prompts][golden][user_type]") {
  TempDir dir;
  std::string spec = kGeluSpec;
  spec.replace(spec.find("gelu_tanh\""), 10, "gelu_golden\"");
  dir.write("gelu_tanh.py", kGeluReference);
  dir.write("gelu_golden.toml", spec);
  const Config cfg = loop_config(dir, "", "[[kernel]]\nspec = \"gelu_golden.toml\"\nshape = [64, 4096]\n");
  ProposalContext ctx;
  ctx.spec = find_spec("gelu_golden");
  REQUIRE(ctx.spec);
  ctx.experiment = 1;
  ctx.tag = "gelu_golden";
  ctx.shape = cfg.kernels[0].shape;
  ctx.dtype = "fp32";
  ctx.first_file = true;
  ctx.gpu = "NVIDIA H100 80GB HBM3";
  ctx.budget = {0, 0, 5, 0, 8, 0.9, 2.0, 0, 2.0, 0, 5};
  auto q = build_chat_request(ctx, 8000);
  REQUIRE(q.ok());
  CHECK_THAT(q->user, Catch::Contains("GPU: NVIDIA H100 80GB HBM3 (its arch comes with the first verdict); measured peak not known yet "
                                      "(the harness measures this GPU's GB/s with the first verdict)"));
  CHECK_THAT(q->user, !Catch::Contains("not yet queried"));
  check_golden("user-type-first-file", ctx);

  // A first file that failed is shown whole, with what the harness said, and the model is asked again.
  PastExperiment failed;
  failed.experiment = 1;
  failed.description = "first file, not passing: one thread per element";
  failed.source = "template <typename T> __global__ void gelu_golden_kernel(const T* x, T* out, int batch_size, int dim) {}\n";
  failed.correctness = "FAIL";
  failed.failure = "shape sweep: wrong output on 3x5 fp32 at [0, 0]: got 0, expected 0.841";
  failed.move = MoveKind::Baseline;
  ctx.history = {failed};
  ctx.experiment = 2;
  ctx.budget.experiments = 1;
  ctx.budget.first_tries = 1;
  check_golden("user-type-first-file-after-a-failure", ctx);
}
