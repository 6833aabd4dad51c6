// What autokernel verify prints from a model run's report: the rows of each run, the op layer's
// cost and the compile decision; and the judgements of the CUDA graph and compile rows.
#include <catch2/catch.hpp>

#include "daemon/verify/verify_report.hpp"
#include "daemon/verify/model_agreement.hpp"

using namespace ak;

namespace {
nlohmann::json full_report() {
  return nlohmann::json::parse(R"({
    "eager": {"rel_l2": 0.003, "finite": true, "median_ms": 13.0, "min_ms": 12.9, "max_ms": 13.2},
    "autokernel": {"rel_l2": 0.003, "finite": true, "median_ms": 10.0, "min_ms": 9.9, "max_ms": 10.3},
    "graph": {"rel_l2": 0.003, "finite": true, "median_ms": 9.0, "min_ms": 8.9, "max_ms": 9.1},
    "autokernel_graph": {"rel_l2": 0.004, "finite": true, "median_ms": 7.5, "min_ms": 7.4, "max_ms": 7.6},
    "compile_modes": {"default": {"rel_l2": 0.003, "finite": true, "median_ms": 8.0},
                      "reduce-overhead": {"rel_l2": 0.003, "finite": true, "median_ms": 7.0}},
    "compile": {"rel_l2": 0.003, "finite": true, "median_ms": 7.0, "mode": "reduce-overhead"},
    "autokernel_compile": {"rel_l2": 0.0035, "finite": true, "median_ms": 6.5, "ops": ["rmsnorm"], "mode": "reduce-overhead"},
    "compile_decision": {"mode": "reduce-overhead", "baseline_ms": 7.0, "single_ms": {"rmsnorm": 6.5, "softmax": 7.2},
                         "helped": ["rmsnorm"], "together_ms": 6.5, "enabled": ["rmsnorm"], "min_gain": 0.01},
    "cpu_cost": {"calls": [{"name": "m.LlamaRMSNorm.forward", "type": "rmsnorm", "us_per_call": 6.25, "original_us_per_call": 41.5,
                            "alone_us_per_call": 5.5, "original_alone_us_per_call": 40.0,
                            "gpu_us_per_call": 11.5, "original_gpu_us_per_call": 33.25}],
                 "max_us_per_call": 6.25, "goal_us": 10.0},
    "gpu_idle": {"eager": {"busy_us": 12000.0, "idle_us": 900.0, "host_us": 8000.0, "syncs": [],
                           "kernels": [{"name": "nvjet_sm90_hsh_128x256", "us": 5000.0, "calls": 56}]},
                 "autokernel": {"busy_us": 9000.0, "idle_us": 950.5, "host_us": 9400.0, "first_op_ms": 0.7,
                                "first_op_cpu_ms": 0.68, "syncs": ["called a synchronizing CUDA operation"]}, "added_us": 50.5}})");
}
}  // namespace

TEST_CASE("the table has a row for each run the report holds, the fastest compile mode marked", "[verify]") {
  const std::string t = timing_table(full_report());
  CHECK_THAT(t, Catch::Contains("CUDA graph   ") && Catch::Contains("CUDA graph + ops"));
  CHECK_THAT(t, Catch::Contains("torch.compile reduce-overhead (best)"));
  CHECK_THAT(t, Catch::Contains("torch.compile default ") && !Catch::Contains("default (best)"));
  CHECK_THAT(t, Catch::Contains("torch.compile + ops (rmsnorm)"));
  CHECK_THAT(t, Catch::Contains("7.500"));
  auto failed = full_report();
  failed["autokernel_graph"] = {{"error", "RuntimeError: operation not permitted when stream is capturing"}};
  CHECK_THAT(timing_table(failed), Catch::Contains("CUDA graph + ops                   failed: RuntimeError: operation not permitted"));
}

TEST_CASE("capture() and Liger's patch are rows of the table, and a failure says why", "[verify]") {
  auto r = full_report();
  r["capture"] = {{"rel_l2", 0.003}, {"finite", true}, {"median_ms", 6.8}, {"causal_sdpa", true}};
  r["autokernel_capture"] = {{"rel_l2", 0.003}, {"finite", true}, {"median_ms", 5.25}};
  r["liger"] = {{"error", "liger_kernel is not installed (ModuleNotFoundError: No module named 'liger_kernel'): pip install liger-kernel"}};
  const std::string t = timing_table(r);
  CHECK_THAT(t, Catch::Contains("capture() (causal SDPA)") && Catch::Contains("capture() + ops") && Catch::Contains("5.250"));
  CHECK_THAT(t, Catch::Contains("Liger-Kernel's patch               failed: liger_kernel is not installed"));
  auto v = judge_report(r, "fp16");
  CHECK(v.agrees);
  r["liger"] = {{"rel_l2", 0.5}, {"finite", true}, {"median_ms", 9.0}};
  v = judge_report(r, "fp16");
  CHECK(v.agrees);  // Liger's output is said, never this package's verdict
  CHECK_THAT(v.lines.back(), Catch::StartsWith("Liger-Kernel's outputs (not judged for the verdict): DISAGREE"));
  r["autokernel_capture"] = {{"error", "autokernel_ops.capture: the model's step cannot be captured"}};
  CHECK_FALSE(judge_report(r, "fp16").agrees);  // the ops broke a capture that works without them
}

TEST_CASE("the share of calls an op served is said per replaced function, with the files that served them", "[verify]") {
  auto r = full_report();
  CHECK(served_text(r).empty());
  r["served"] = nlohmann::json::parse(R"({"calls": [
      {"name": "m.Qwen3RMSNorm.forward", "type": "rmsnorm", "calls": 49, "served": 49, "declined": 0, "op_fell_back": 0,
       "files": {"norm": 17, "qk_norm": 32}},
      {"name": "m.apply_rotary_pos_emb", "type": "rotary_embedding", "calls": 8, "served": 6, "declined": 2, "op_fell_back": 0, "files": {}},
      {"name": "m.Phi3MLP.forward", "type": "swiglu", "calls": 0, "served": 0, "declined": 0, "op_fell_back": 0, "not_its_form": 8}],
      "by_type": {"rmsnorm": 1.0, "rotary_embedding": 0.75}})");
  const std::string t = served_text(r);
  CHECK_THAT(t, Catch::Contains("100.0% (49 of 49) m.Qwen3RMSNorm.forward; by file: norm 17, qk_norm 32"));
  CHECK_THAT(t, Catch::Contains(" 75.0% (6 of 8) m.apply_rotary_pos_emb; 2 declined in Python"));
  CHECK_THAT(t, Catch::Contains("(8 calls) m.Phi3MLP.forward: not of the form the op computes"));
}

TEST_CASE("the op layer's cost is said per replacement beside the original, with where the GPU's time goes", "[verify]") {
  const std::string t = op_cost_text(full_report());
  CHECK_THAT(t, Catch::Contains("goal: at most 10 µs alone"));
  CHECK_THAT(t, Catch::Contains("m.LlamaRMSNorm.forward\n    CPU   5.50 µs alone,   6.25 in the model's steps (the original  40.00,  41.50)"));
  CHECK_THAT(t, Catch::Contains("GPU    11.50 µs (the original    33.25)"));
  CHECK_THAT(t, Catch::Contains("eager busy 12000.0 µs, idle 900.0 µs; with the ops busy 9000.0 µs, idle 950.5 µs; "
                                "the ops add 50.5 µs of idle time"));
  CHECK_THAT(t, Catch::Contains("the kernels of a step, eager:") && Catch::Contains("5000.0 µs  56.0 calls  nvjet_sm90_hsh_128x256"));
  CHECK_THAT(t, !Catch::Contains("the kernels of a step, with the ops"));
  CHECK_THAT(t, Catch::Contains("the CPU issues a step, eager, in 8000.0 µs against 12000.0 µs of kernels: the CPU keeps ahead\n"));
  CHECK_THAT(t, Catch::Contains("the CPU issues a step, with the ops, in 9400.0 µs against 9000.0 µs of kernels: the GPU waits for "
                                "the CPU; 1 waits for the GPU in a step, the first: called a synchronizing CUDA operation\n"));
  // The idle time before the model's first op call is the model's own; what falls after it is at most the rest.
  CHECK_THAT(t, Catch::Contains("the first call of what the ops replace comes 0.70 ms into the step (0.68 ms of the CPU's)"));
  CHECK_THAT(t, Catch::Contains("at most 250.5 µs of the idle time falls after it"));
  CHECK(op_cost_text(nlohmann::json::object()).empty());
}

TEST_CASE("the compile decision shows each measured step and what runs under compilation", "[verify]") {
  const std::string t = compile_decision_text(full_report());
  CHECK_THAT(t, Catch::Contains("compile decision (mode reduce-overhead): compile alone 7.000 ms; rmsnorm alone 6.500 ms; "
                                "softmax alone 7.200 ms"));
  CHECK_THAT(t, Catch::Contains("under torch.compile the ops of: rmsnorm"));
  auto none = full_report();
  none["compile_decision"]["enabled"] = nlohmann::json::array();
  CHECK_THAT(compile_decision_text(none), Catch::Contains("the ops of: none"));
  CHECK(compile_decision_text(nlohmann::json::object()).empty());
}

TEST_CASE("a CUDA graph the ops break, or a wrong graph or compiled output, is a disagreement", "[verify]") {
  auto report = full_report();
  CHECK(judge_report(report, "fp16").agrees);
  CHECK(judge_report(report, "fp16").lines.size() == 3);
  auto broken = full_report();
  broken["autokernel_graph"] = {{"error", "RuntimeError: capture"}};
  auto v = judge_report(broken, "fp16");
  CHECK_FALSE(v.agrees);
  CHECK_THAT(v.lines[1], Catch::Contains("does not capture"));
  // Without ops the model does not capture either: not the ops' doing.
  broken["graph"] = {{"error", "RuntimeError: capture"}};
  CHECK(judge_report(broken, "fp16").agrees);
  auto wrong_graph = full_report();
  wrong_graph["autokernel_graph"]["rel_l2"] = 0.05;
  CHECK_FALSE(judge_report(wrong_graph, "fp16").agrees);
  auto wrong_compile = full_report();
  wrong_compile["autokernel_compile"]["rel_l2"] = 0.05;
  CHECK_FALSE(judge_report(wrong_compile, "fp16").agrees);
  // No op runs under compilation: compile + ops is compile alone, nothing to judge.
  wrong_compile["autokernel_compile"]["ops"] = nlohmann::json::array();
  CHECK(judge_report(wrong_compile, "fp16").agrees);
}
