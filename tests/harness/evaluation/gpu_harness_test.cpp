// The harness on a real GPU: the references against the CPU, the starters through all five
// stages, and a suite of deliberately bad candidates, each with the verdict it deserves, run
// through the real worker so that none of them can harm this process.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>

#include "harness/compile/kernel_contract.hpp"
#include "harness/gpu/host_dtype.hpp"
#include "harness/gpu/inputs.hpp"
#include "harness/judging/device_peaks.hpp"
#include "harness/judging/reference_outputs.hpp"
#include "harness/module/kernel_launch.hpp"
#include "harness/module/run_buffers.hpp"
#include "harness/process/worker_environment.hpp"
#include "harness/worker/worker_evaluator.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/harness/evaluation/gpu_judge.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

using test::evaluator;
using test::judge;
using test::starter_with;
using test::starter_with_text;

const std::string kRmsnormStore = "yr[i] = ak_from_float<T>(ak_to_float(xr[i]) * inv * ak_to_float(weight[i]));";

}  // namespace

/// The inputs of a run set as doubles, for the CPU reference.
std::vector<std::vector<double>> inputs_as_doubles(const KernelSpec& spec, const RunSet& set, DType d) {
  std::vector<std::vector<double>> out;
  size_t k = 0;
  for (const ArgSpec& a : spec.args) {
    if (a.kind != ArgSpec::Input) continue;
    const auto& bytes = set.host_inputs[k++];
    const size_t n = bytes.size() / elem_size(a.elem, d);
    out.emplace_back(n);
    for (size_t i = 0; i < n; ++i)
      out.back()[i] = a.elem == Elem::I64 ? double(reinterpret_cast<const int64_t*>(bytes.data())[i])
                                          : load_as_float(bytes.data(), d, i);
  }
  return out;
}

TEST_CASE("the GPU references agree with the CPU double-precision references", "[gpu]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  for (const KernelSpec* spec : all_specs()) {
    CompileRequest req{spec->reference_source, spec->type + "_reference.cu", {}, (*gpu)->info().arch};
    req.name_expressions = reference_expressions(*spec);
    auto compiled = nvrtc_compile(req);
    REQUIRE(compiled.ok());
    INFO(compiled->log);
    REQUIRE(compiled->ok);
    auto ref = LaunchableKernel::reference(**gpu, *spec, *compiled, ReferenceOutput::Fp32);
    REQUIRE(ref.ok());
    for (DType d : spec->dtypes)
      for (const Shape& shape : {spec->smoke_shape, spec->sweep_shapes[3], spec->edge_shapes[2], spec->edge_shapes[5]}) {
        INFO(spec->type << " " << shape_str(shape) << " " << dtype_name(d));
        auto set = make_run_set(**gpu, *spec, shape, d, Recipe::Normal, 11);
        REQUIRE(set.ok());
        RunBuffers b = set->view();
        // Under sampled validation, a sample that leaves rows out: the compaction is checked too.
        std::vector<int32_t> rows;
        DeviceBuffer d_rows;
        if (spec->validation_rows > 0) {
          const int64_t all = output_rows(*spec, shape);
          rows = pick_sample_rows(all, int(std::max<int64_t>(1, std::min<int64_t>(all / 2 + 1, spec->validation_rows))), 5);
          d_rows = std::move(*(*gpu)->alloc(rows.size() * sizeof(int32_t)));
          REQUIRE((*gpu)->upload(d_rows, rows.data(), d_rows.bytes()).ok());
          b.sample_rows = &d_rows;
          b.sample_count = int64_t(rows.size());
        }
        std::vector<DeviceBuffer> outs;
        b.outputs.clear();
        for (auto& o : set->outputs) {
          size_t n = rows.empty() ? o.bytes() / dtype_size(d) : rows.size() * size_t(spec->output_row_length(shape));
          outs.push_back(std::move(*(*gpu)->alloc(n * sizeof(float))));
        }
        for (auto& o : outs) b.outputs.push_back(&o);
        REQUIRE(ref->launch(*spec, d, shape, b) == CUDA_SUCCESS);
        REQUIRE((*gpu)->driver().cuCtxSynchronize() == CUDA_SUCCESS);
        CHECK(counters_left_set(**gpu, *set).empty());
        auto want_all = spec->cpu_reference(shape, d, inputs_as_doubles(*spec, *set, d));
        REQUIRE(want_all.size() == outs.size());
        for (size_t o = 0; o < outs.size(); ++o) {
          std::vector<float> got(outs[o].bytes() / sizeof(float));
          REQUIRE((*gpu)->download(got.data(), outs[o], outs[o].bytes()).ok());
          const int64_t len = rows.empty() ? 0 : spec->output_row_length(shape);
          // fp32 math within 1e-5 of double; an fp32 sum of n terms that cancel also carries a
          // rounding walk of about sqrt(n) units of its terms' size, which the absolute part allows.
          const double absolute = 1e-6 * std::sqrt(double(spec->cols(shape)));
          double worst = 0;
          for (size_t i = 0; i < got.size(); ++i) {
            const size_t at = rows.empty() ? i : size_t(rows[i / size_t(len)]) * size_t(len) + i % size_t(len);
            const double want = want_all[o].at(at);
            worst = std::max(worst, std::fabs(got[i] - want) / (absolute + 1e-5 * std::fabs(want)));
          }
          CHECK(worst <= 1.0);
        }
      }
  }
}

TEST_CASE("the measured peaks of the GPU are plausible and cached", "[gpu]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  auto bw = measure_copy_bandwidth(**gpu);
  REQUIRE(bw.ok());
  CHECK(*bw > 500);      // GB/s: any HBM or GDDR card
  CHECK(*bw < 20000);
  auto tf = measure_gemm_tflops(**gpu);
  REQUIRE(tf.ok());
  CHECK(*tf > 20);       // TFLOPS of fp16 tensor-core GEMM
  CHECK(*tf < 5000);
  std::printf("measured: %.0f GB/s copy, %.0f TFLOPS fp16 GEMM on %s\n", *bw, *tf, (*gpu)->info().name.c_str());
  auto cached = device_peaks(**gpu);
  REQUIRE(cached.ok());
  CHECK(cached->compute_tflops > 20);
}

TEST_CASE("the starters pass all five stages and are timed", "[gpu]") {
  if (!test::gpu_or_skip()) return;
  for (const KernelSpec* spec : all_specs()) {
    Verdict v = judge(*spec, spec->starter_source());
    INFO(spec->type << ": " << v.message);
    CHECK(v.correctness == Correctness::Pass);
    REQUIRE(v.stages.size() == 7);  // compile, five stages, benchmark
    REQUIRE(v.timing.has_value());
    CHECK(v.timing->median_us > 0);
    CHECK(v.throughput > 0);
    CHECK(v.pct_peak > 0);
    CHECK(v.pct_peak < kSuspectFactor);
    // CUPTI's kernel time and the events around the launch agree within launch overhead.
    CHECK(std::fabs(v.timing->event_median_us - v.timing->median_us) < 0.1 * v.timing->median_us + 10);
    CHECK(v.reference_us + v.cublas_us > 0);
    CHECK(v.baseline_us > 0);
  }
}

TEST_CASE("every variant passes all five stages and is timed", "[gpu][variants]") {
  if (!test::gpu_or_skip()) return;
  for (const KernelSpec* spec : all_specs()) {
    const auto variants = kernel_variants(spec->type);
    for (size_t i = 1; i < variants.size(); ++i) {
      Verdict v = judge(*spec, *variants[i].source);
      INFO(spec->type << " " << variants[i].name << ": " << v.message);
      CHECK(v.correctness == Correctness::Pass);
      REQUIRE(v.timing.has_value());
      CHECK(v.timing->median_us > 0);
      CHECK(v.pct_peak < kSuspectFactor);
    }
  }
}

TEST_CASE("a best one worker judged is timed by another worker from the run's shared compiles, not compiled again", "[gpu]") {
  if (!test::gpu_or_skip()) return;
  test::TempDir tmp;
  const std::string shared = (tmp.path / "compiled").string(), times = (tmp.path / "times").string();
  std::filesystem::create_directories(shared);
  std::filesystem::create_directories(times);
  auto request = [&](const std::string& source, const std::string& best) {
    EvalRequest r;
    r.kernel_type = "rmsnorm";
    r.source = source;
    r.best_source = best;
    r.time_starter = false;
    r.repetitions = 30;
    r.counters = false;
    r.shared_compiles = shared;
    return r;
  };
  const std::string best = rmsnorm_spec().starter_source();
  auto first = evaluator().evaluate(request(best, ""));   // judged alone, as a run's starter is
  REQUIRE(first.ok());
  REQUIRE(first->passed());
  REQUIRE(std::distance(std::filesystem::directory_iterator(shared), std::filesystem::directory_iterator()) == 1);
  // A second worker, as a second GPU's would be, its driver calls and phases timed.
  std::vector<std::string> env;
  for (const std::string& e : minimal_environment())
    if (e.rfind("AUTOKERNEL_DRIVER_TIMES=", 0) != 0) env.push_back(e);
  env.push_back("AUTOKERNEL_DRIVER_TIMES=" + times);
  WorkerEvaluator::Options o;
  o.command = {test::autokernel_binary(), "worker"};
  o.stage_timeout_s = 20;
  o.environment = env;
  WorkerEvaluator second(o);
  auto v = second.evaluate(request(best + "\n// another candidate\n", best));
  REQUIRE(v.ok());
  INFO(nlohmann::json(*v).dump(1));
  CHECK(v->passed());
  CHECK(v->paired.pairs > 0);   // timed beside the best
  std::string table;
  for (const auto& f : std::filesystem::directory_iterator(times)) table += test::read_file(f.path().string());
  CHECK_THAT(table, Catch::Contains("benchmark: the best found in the shared compiles"));
  CHECK_THAT(table, !Catch::Contains("benchmark: the best compiled"));
}

TEST_CASE("a candidate that touches an illegal address is CRASH and the next gets a fresh worker", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  REQUIRE(judge(rmsnorm_spec(), rmsnorm_spec().starter_source()).passed());
  const int starts = evaluator().starts();
  Verdict v = judge(rmsnorm_spec(), starter_with(rmsnorm_spec(), "const float inv =",
                                                 "if (ss != 12345.f) *(volatile float*)8 = ss;\n  const float inv ="));
  CHECK(v.correctness == Correctness::Crash);
  CHECK(v.failed_stage == "smoke");
  CHECK_THAT(v.message, Catch::Contains("ILLEGAL_ADDRESS"));
  CHECK(judge(rmsnorm_spec(), rmsnorm_spec().starter_source()).passed());
  CHECK(evaluator().starts() == starts + 1);
}

TEST_CASE("a candidate that writes far out of bounds is CRASH", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(rmsnorm_spec(), starter_with(rmsnorm_spec(), kRmsnormStore,
                                                 "{ " + kRmsnormStore + " yr[i + (1ll << 36)] = yr[i]; }"));
  CHECK(v.correctness == Correctness::Crash);
}

TEST_CASE("a candidate that writes one element past each row is FAIL or CRASH, never PASS", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(rmsnorm_spec(), starter_with(rmsnorm_spec(), kRmsnormStore,
                                                 "{ " + kRmsnormStore + " if (i == 0) yr[cols] = ak_from_float<T>(7.f); }"));
  CHECK((v.correctness == Correctness::Fail || v.correctness == Correctness::Crash));
}

TEST_CASE("a candidate that never ends is TIMEOUT", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(softmax_spec(), starter_with(softmax_spec(), "if (!active) return;",
                                                 "while (cols > 0) { __nanosleep(100); }"));
  CHECK(v.correctness == Correctness::Timeout);
  CHECK(v.failed_stage == "smoke");
}

TEST_CASE("a candidate whose result changes from run to run fails the determinism stage", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  // A 1e-6 wobble, inside every tolerance, that depends on when the block runs: only the
  // bitwise comparison of repeated runs can see it.
  Verdict v = judge(rmsnorm_spec(), starter_with(rmsnorm_spec(), "const float inv = rsqrtf(row_sum(ss, group) / cols + eps);",
                                                 "unsigned t; asm volatile(\"mov.u32 %0, %%globaltimer_lo;\" : \"=r\"(t));\n"
                                                 "  const float inv = rsqrtf(row_sum(ss, group) / cols + eps) * (((t >> 6) & 1) ? 1.000001f : 1.f);"));
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_stage == "determinism");
}

TEST_CASE("a candidate that outputs NaN fails with the element shown", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(rmsnorm_spec(), starter_with(rmsnorm_spec(), kRmsnormStore,
                                                 "{ " + kRmsnormStore + " if (i == 5) yr[i] = ak_from_float<T>(__int_as_float(0x7fc00000)); }"));
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_stage == "smoke");
  CHECK(v.worst_index % 512 == 5);
  CHECK(std::isnan(v.worst_got));
}

TEST_CASE("a candidate that writes only part of the output fails as never written", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(softmax_spec(), starter_with(softmax_spec(), "for (int i = lane; i < cols; i += kRowThreads) yr[i]",
                                                 "for (int i = lane; i < cols - 1; i += kRowThreads) yr[i]"));
  CHECK(v.correctness == Correctness::Fail);
  CHECK_THAT(v.message, Catch::Contains("never written"));
}

TEST_CASE("a candidate that reads past the row end fails on shapes that are not multiples of 32", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(rmsnorm_spec(), starter_with(rmsnorm_spec(),
                                                 "for (int i = lane; i < cols; i += kRowThreads) { float f",
                                                 "for (int i = lane; i < (cols + 31) / 32 * 32; i += kRowThreads) { float f"));
  CHECK(v.correctness != Correctness::Pass);
  CHECK(v.failed_stage != "smoke");   // 512 columns: the smoke shape cannot see it
}

TEST_CASE("a candidate that rounds through half precision fails in fp32", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(softmax_spec(), starter_with(softmax_spec(), "yr[i] = ak_from_float<T>(expf(ak_to_float(xr[i]) - m) * inv);",
                                                 "yr[i] = ak_from_float<T>(__half2float(__float2half(expf(ak_to_float(xr[i]) - m) * inv)));"));
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_dtype == "fp32");
}

TEST_CASE("a candidate that does not compile is COMPILE_ERROR with the log", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(softmax_spec(), starter_with(softmax_spec(), "const float inv", "const flaot inv"));
  CHECK(v.correctness == Correctness::CompileError);
  CHECK_THAT(v.compile_log, Catch::Contains("flaot"));
}

TEST_CASE("a candidate that leaves its counters set fails with the counter named", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  // The mean comes out right on the first launch; the next launch would see a stale ticket.
  Verdict v = judge(cross_entropy_spec(), starter_with(cross_entropy_spec(), "    counters[0] = 0;\n", ""));
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_stage == "smoke");
  CHECK_THAT(v.message, Catch::Contains("counter 0 is 8 after the kernel ended"));  // 8 rows, 8 tickets
}

TEST_CASE("a matmul that drops the last partial step of K fails where K is off the tile, seen by the sampled check", "[gpu][bad]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(matmul_spec(), starter_with(matmul_spec(), "const int k_tiles = (K + AK_TILE_K - 1) / AK_TILE_K;",
                                                "const int k_tiles = K / AK_TILE_K;"));
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_stage == "shape sweep");
  CHECK(v.failed_shape == "100x200x300x1");
}

TEST_CASE("the matmul starter with its cp.async pipeline on passes all five stages", "[gpu]") {
  if (!test::gpu_or_skip()) return;
  for (const char* stages : {"2", "3"}) {
    INFO("AK_STAGES " << stages);
    Verdict v = judge(matmul_spec(), starter_with(matmul_spec(), "#define AK_STAGES 1 ", std::string("#define AK_STAGES ") + stages + " "));
    CHECK(v.correctness == Correctness::Pass);
  }
}
