// The decisions of an evaluation, each alone, without a GPU: whether a request can be judged and
// whose fault it is when not, what a compile puts in the verdict, what a broken timing is blamed
// on, which baselines are timed and what the speedup is against, and whether counters are read.
#include <catch2/catch.hpp>

#include "harness/evaluation/evaluation_decisions.hpp"
#include "kernels_cuda/registry.hpp"

using namespace ak;

namespace {

const char* kVersion2 = "extern \"C\" __constant__ int ak_contract_version = 2;\n";

}  // namespace

TEST_CASE("a shape with another number of dimensions than the contract's is refused, naming what it takes",
          "[evaluation_decisions]") {
  const KernelSpec* spec = find_spec("softmax");
  REQUIRE(spec != nullptr);
  Shape one_too_many = spec->bench_shape;
  one_too_many.push_back(2);
  const std::string why = contract_mismatch(*spec, "", one_too_many);
  CHECK_THAT(why, Catch::Contains(std::to_string(one_too_many.size()) + " dimensions"));
  CHECK_THAT(why, Catch::Contains("give a shape of that version"));
  CHECK(contract_mismatch(*spec, "", spec->bench_shape).empty());
}

TEST_CASE("a file of another contract version than the kernel's kept file cannot be paired with it",
          "[evaluation_decisions]") {
  const KernelSpec* v2 = find_spec("matmul", 2);
  const KernelSpec* v1 = find_spec("matmul", 1);
  REQUIRE(v2 != nullptr);
  REQUIRE(v1 != nullptr);
  const std::string kept_v1 = "// a matmul file of version 1: it declares none\n";
  CHECK_THAT(contract_mismatch(*v2, kept_v1, v2->bench_shape), Catch::Contains("keeps the version it started with"));
  CHECK(contract_mismatch(*v2, kVersion2, v2->bench_shape).empty());
  CHECK(contract_mismatch(*v1, kept_v1, v1->bench_shape).empty());
}

TEST_CASE("a request refused for its file is the candidate's compile error, refused for anything else it only says why",
          "[evaluation_decisions]") {
  Verdict file;
  refuse_request(file, "no version of the contract fits", true);
  CHECK(file.correctness == Correctness::CompileError);
  CHECK(file.failed_stage == "compile");
  CHECK(file.message == "no version of the contract fits");
  Verdict other;
  refuse_request(other, "unknown dtype 'fp8'", false);
  CHECK(other.correctness == Correctness::Fail);
  CHECK(other.failed_stage.empty());
  CHECK(other.message == "unknown dtype 'fp8'");
}

TEST_CASE("seeds derived from a given seed are said to be predictable, fresh ones are not", "[evaluation_decisions]") {
  Verdict fixed;
  record_seeds(fixed, EvaluationSeeds::from(42), 42);
  CHECK(fixed.fixed_seed);
  CHECK(fixed.seed == 42);
  REQUIRE(fixed.notes.size() == 1);
  CHECK_THAT(fixed.notes[0], Catch::Contains("fixed seed 42"));
  Verdict fresh;
  EvaluationSeeds drawn;
  drawn.stage_inputs = 7;
  record_seeds(fresh, drawn, 0);
  CHECK_FALSE(fresh.fixed_seed);
  CHECK(fresh.seed == 7);
  CHECK(fresh.notes.empty());
}

TEST_CASE("a failed compile is a compile error with its log and a failed compile stage", "[evaluation_decisions]") {
  Verdict v;
  fail_compile(v, "expected a ';'", "kernel.cu(3): error: expected a ';'", 0.25);
  CHECK(v.correctness == Correctness::CompileError);
  CHECK(v.failed_stage == "compile");
  CHECK(v.compile_log == "kernel.cu(3): error: expected a ';'");
  REQUIRE(v.stages.size() == 1);
  CHECK(v.stages[0].name == "compile");
  CHECK_FALSE(v.stages[0].passed);
  CHECK(v.stages[0].seconds == 0.25);
}

TEST_CASE("the compile statistics are the timed dtype's entry point's, else the driver's", "[evaluation_decisions]") {
  std::vector<FunctionInfo> functions(3);
  functions[0].registers = 32;
  functions[1].registers = 40, functions[1].spill_stores = 8, functions[1].spill_loads = 4;
  functions[1].static_smem_bytes = 1024;
  functions[2].registers = 64;
  Verdict v;
  record_compile_statistics(v, {DType::F16, DType::BF16, DType::F32}, functions, DType::BF16);
  CHECK(v.registers == 40);
  CHECK(v.spill_bytes == 12);
  CHECK(v.static_smem_bytes == 1024);
  Verdict fewer;   // more dtypes than functions reads none past the end
  record_compile_statistics(fewer, {DType::F16, DType::BF16, DType::F32}, {functions[0]}, DType::F32);
  CHECK(fewer.registers == -1);
  FunctionInfo loaded;
  loaded.registers = 24, loaded.stack_bytes = 16, loaded.static_smem_bytes = 512;
  record_driver_statistics(fewer, loaded);
  CHECK(fewer.registers == 24);
  CHECK(fewer.spill_bytes == 16);
  CHECK(fewer.static_smem_bytes == 512);
}

TEST_CASE("a timing that lost the context is a crash, another error a failure, the harness's stays the harness's",
          "[evaluation_decisions]") {
  const StageFailure lost = timing_error_failure(error("timed launches failed: CUDA_ERROR_ILLEGAL_ADDRESS"), true);
  CHECK(lost.correctness == Correctness::Crash);
  CHECK(lost.message == "timed launches failed: CUDA_ERROR_ILLEGAL_ADDRESS");
  CHECK_FALSE(lost.harness);
  Error oom = error("allocating 1 GiB failed");
  oom.harness = true;
  const StageFailure harness = timing_error_failure(oom, false);
  CHECK(harness.correctness == Correctness::Fail);
  CHECK(harness.harness);
}

TEST_CASE("a best that failed its own checks beside the candidate is noted, never the candidate's failure",
          "[evaluation_decisions]") {
  StageFailure best_failed;
  best_failed.message = "wrong output during timing";
  Verdict v;
  PairedTiming paired;
  note_failing_best({std::nullopt, best_failed}, paired, v);
  CHECK(paired.best_failure == "wrong output during timing");
  REQUIRE(v.notes.size() == 1);
  CHECK_THAT(v.notes[0], Catch::Contains("the current best failed its own checks"));
  CHECK(v.correctness == Correctness::Fail);   // untouched: the candidate's own launches judge it
  Verdict alone;
  PairedTiming none;
  note_failing_best({std::nullopt}, none, alone);
  CHECK(none.best_failure.empty());
  CHECK(alone.notes.empty());
}

TEST_CASE("a cuBLAS type is timed against cuBLAS, another against its reference kernel, then the starter if asked",
          "[evaluation_decisions]") {
  CHECK(baselines_to_time(Baseline::Cublas, true, false) == std::vector{BaselineKind::Cublas, BaselineKind::Starter});
  CHECK(baselines_to_time(Baseline::ReferenceKernel, false, false) == std::vector{BaselineKind::Reference});
  CHECK(baseline_name(BaselineKind::Cublas) == "cuBLAS");
  CHECK(baseline_name(BaselineKind::Reference) == "reference");
  CHECK(baseline_name(BaselineKind::Starter) == "starter");
  Verdict v;
  baseline_field(v, BaselineKind::Cublas) = 1, baseline_field(v, BaselineKind::Reference) = 2;
  baseline_field(v, BaselineKind::Starter) = 3;
  CHECK(v.cublas_us == 1);
  CHECK(v.reference_us == 2);
  CHECK(v.starter_us == 3);
}

TEST_CASE("the speedup is against the configured baseline when given, else the measured one, else none",
          "[evaluation_decisions]") {
  Verdict configured;
  settle_speedup(configured, 30.0, 20.0, "reference kernel", 10.0);
  CHECK(configured.baseline_us == 30.0);
  CHECK(configured.baseline_source == "config");
  CHECK(configured.speedup == 3.0);
  Verdict measured;
  settle_speedup(measured, std::nullopt, 20.0, "PyTorch eager", 10.0);
  CHECK(measured.baseline_source == "PyTorch eager");
  CHECK(measured.speedup == 2.0);
  Verdict none;
  settle_speedup(none, std::nullopt, 0.0, "cuBLAS", 10.0);
  CHECK(none.baseline_source == "unavailable");
  CHECK(none.speedup == 0.0);
}

TEST_CASE("counters are read for a passed candidate of any type unless turned off or the context was lost",
          "[evaluation_decisions]") {
  const PairedTiming alone;
  CHECK_FALSE(counters_skipped(true, false, alone, false));
  CHECK_THAT(*counters_skipped(false, false, alone, false), Catch::Contains("[harness] counters = false"));
  CHECK_THAT(*counters_skipped(true, true, alone, false), Catch::Contains("context was lost"));
  // Turned off says so first: a config that turned them off is why, whatever else happened.
  CHECK_THAT(*counters_skipped(false, true, alone, false), Catch::Contains("turned off in the config"));
}

TEST_CASE("a candidate its pairing does not show faster than the best gets no counters unless asked for", "[evaluation_decisions]") {
  PairedTiming slower;
  slower.pairs = 100, slower.ratio = 1.05, slower.noise = 0.01;
  auto why = counters_skipped(true, false, slower, false);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("1.050x the best's time") && Catch::Contains("counters_for_all = true"));
  CHECK_FALSE(counters_skipped(true, false, slower, true));
  // Within the noise of the best: not faster, not kept, not read.
  PairedTiming within = slower;
  within.ratio = 0.995;
  CHECK(counters_skipped(true, false, within, false));
  // Faster beyond the noise, or a pairing that proves nothing: read, as it may be kept.
  PairedTiming faster = slower;
  faster.ratio = 0.98;
  CHECK_FALSE(counters_skipped(true, false, faster, false));
  PairedTiming doubtful = slower;
  doubtful.best_failure = "the best's own launch failed its check";
  CHECK_FALSE(counters_skipped(true, false, doubtful, false));
}

TEST_CASE("a request that carries its baseline time has no library baseline timed, only the starter if asked",
          "[evaluation_decisions]") {
  CHECK(baselines_to_time(Baseline::Cublas, false, true).empty());
  CHECK(baselines_to_time(Baseline::ReferenceKernel, true, true) == std::vector{BaselineKind::Starter});
}
