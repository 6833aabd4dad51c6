// The counters pass on a real GPU, through the real worker: each reading moves the way the kernel
// written to move it says it must. Every failure prints both verdicts' counters whole (INFO), so
// a missing metric, a refusal or a reading on the wrong side is visible in the test's output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/harness/evaluation/gpu_judge.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

const std::string* variant_source(const std::string& type, const std::string& name) {
  for (const auto& v : kernel_variants(type))
    if (v.name == name) return v.source;
  return nullptr;
}

std::string counters_of(const Verdict& v) {
  return v.counters ? nlohmann::json(*v.counters).dump() : std::string("(no counters in the verdict)");
}

/// The verdict passed and carries readings; otherwise the test stops with what it carries.
void require_readings(const Verdict& v, const std::string& what) {
  INFO(what << ": correctness " << correctness_name(v.correctness) << ", message: " << v.message);
  INFO(what << " counters: " << counters_of(v));
  REQUIRE(v.passed());
  REQUIRE(v.counters.has_value());
  REQUIRE(v.counters->unavailable == "");
  CHECK(v.counters->passes > 0);
}

/// "where the time went: buffers 0.010, setup 0.020, ..." of one pass's phases.
std::string phases_of(const CountersPhases& p) {
  char line[200];
  std::snprintf(line, sizeof line, "buffers %.3f, setup %.3f, prepare %.3f, launch %.3f, check %.3f, read %.3f",
                p.buffers, p.setup, p.prepare, p.launch, p.check, p.read);
  return line;
}

/// The tests' GELU user type (tests/kernels_cuda/user_type_specs.hpp) under its own name, so that
/// no other test's registration in the shared worker clashes, and a plain honest file for it.
struct GeluUserType {
  UserTypeSpec spec;
  std::string source;
};
GeluUserType counters_gelu() {
  const std::string name = "counters_gelu";
  std::string text = test::kGeluSpec;
  text.replace(text.find("gelu_tanh"), 9, name);
  auto s = parse_user_type(text, "types/" + name + ".toml");
  REQUIRE(s.ok());
  REQUIRE(with_sources(*s, test::kGeluReference, "").ok());
  const std::string source = R"(#include <cuda_fp16.h>
extern "C" __constant__ int ak_block_threads = 256;
__device__ __forceinline__ float ak_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_f(float v) { return v; }
__device__ __forceinline__ void ak_put(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void ak_put(float* p, float v) { *p = v; }
template <typename T>
__global__ void counters_gelu_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)batch_size * dim) return;
  const float v = ak_f(x[i]);
  ak_put(out + i, 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))));
}
)";
  return {*s, source};
}

/// A GELU user type's candidate judged through the worker at 8192 x 8192 fp32 (its spec's own
/// bench shape would be 6 GiB of inputs).
Verdict judge_gelu_user_type(bool counters) {
  const GeluUserType gelu = counters_gelu();
  EvalRequest r;
  r.kernel_type = gelu.spec.name;
  r.user_type = gelu.spec.to_json();
  r.source = gelu.source;
  r.dtype = "fp32";
  r.shape = {8192, 8192};
  r.warmup = 2;
  r.repetitions = 20;
  r.time_starter = false;
  r.torch_compile = false;   // minutes of autotuning
  r.counters = counters;
  auto v = test::evaluator().evaluate(r);
  REQUIRE(v.ok());
  INFO(nlohmann::json(*v).dump(1));
  INFO("the reference process needs a Python with torch and CUDA: set AK_REFERENCE_PYTHON");
  REQUIRE_FALSE(v->harness_error);
  return *v;
}

// The starter's reduction with one more trip through shared memory, laid out so that the 32
// lanes of a warp all hit one bank (32-way conflicts), each thread reading back its own value.
const std::string kConflictedSum =
    "  const float inv = rsqrtf(row_sum(ss, group) / cols + eps);";
const std::string kConflictedSumWith = R"(  __shared__ float conflicted[32 * 32];
  for (int round = 0; round < 16; ++round) {
    conflicted[(threadIdx.x % 32) * 32 + (threadIdx.x / 32) % 32] = ss;
    __syncthreads();
    ss = conflicted[(threadIdx.x % 32) * 32 + (threadIdx.x / 32) % 32];
    __syncthreads();
  }
  const float inv = rsqrtf(row_sum(ss, group) / cols + eps);)";

}  // namespace

TEST_CASE("a faster memory-bound file reads DRAM closer to its peak than the starter", "[gpu][counters]") {
  if (!test::gpu_or_skip()) return;
  const std::string* fast = variant_source("rmsnorm", "row_in_registers");
  REQUIRE(fast);
  const Verdict starter = test::judge(rmsnorm_spec(), rmsnorm_spec().starter_source());
  const Verdict faster = test::judge(rmsnorm_spec(), *fast);
  require_readings(starter, "the rmsnorm starter");
  require_readings(faster, "rmsnorm row_in_registers");
  INFO("starter " << starter.timing->median_us << " us, counters " << counters_of(starter));
  INFO("row_in_registers " << faster.timing->median_us << " us, counters " << counters_of(faster));
  REQUIRE(starter.counters->dram_pct.has_value());
  REQUIRE(faster.counters->dram_pct.has_value());
  CHECK(faster.timing->median_us < starter.timing->median_us);
  CHECK(*faster.counters->dram_pct > *starter.counters->dram_pct);
  CHECK(*faster.counters->dram_pct > 50);
  CHECK(*faster.counters->dram_pct <= 100.5);
  // Timing runs again after a counters pass: CUPTI's activity records still come.
  REQUIRE(faster.timing.has_value());
  CHECK(faster.timing->source == "CUPTI");
  std::printf("counters: rmsnorm 8192x8192 fp16 DRAM %% of peak: starter %.1f (%.1f us), row_in_registers %.1f (%.1f us), %d passes\n",
              *starter.counters->dram_pct, starter.timing->median_us, *faster.counters->dram_pct,
              faster.timing->median_us, faster.counters->passes);
}

TEST_CASE("the TMA matmul keeps the tensor pipe mostly busy", "[gpu][counters]") {
  if (!test::gpu_or_skip()) return;
  const std::string* tma = variant_source("matmul", "tma_warp_specialized");
  REQUIRE(tma);
  const Verdict v = test::judge(matmul_spec(), *tma);
  require_readings(v, "matmul tma_warp_specialized");
  INFO("counters " << counters_of(v));
  REQUIRE(v.counters->tensor_pct.has_value());
  CHECK(*v.counters->tensor_pct > 50);
  std::printf("counters: matmul tma_warp_specialized 4096^3 fp16: tensor pipe %.1f%%, SM %.1f%%, DRAM %.1f%%\n",
              *v.counters->tensor_pct, v.counters->sm_pct.value_or(-1), v.counters->dram_pct.value_or(-1));
}

TEST_CASE("a file written with shared-memory bank conflicts shows them", "[gpu][counters]") {
  if (!test::gpu_or_skip()) return;
  const std::string conflicted = test::starter_with(rmsnorm_spec(), kConflictedSum, kConflictedSumWith);
  const Verdict plain = test::judge(rmsnorm_spec(), rmsnorm_spec().starter_source());
  const Verdict v = test::judge(rmsnorm_spec(), conflicted);
  require_readings(plain, "the rmsnorm starter");
  require_readings(v, "the rmsnorm starter with 32-way bank conflicts");
  INFO("plain " << counters_of(plain) << "\nconflicted " << counters_of(v));
  REQUIRE(plain.counters->bank_conflicts.has_value());
  REQUIRE(v.counters->bank_conflicts.has_value());
  CHECK(*v.counters->bank_conflicts > 10 * std::max(1000.0, *plain.counters->bank_conflicts));
  REQUIRE(v.counters->bank_conflict_ratio.has_value());
  CHECK(*v.counters->bank_conflict_ratio > 0.5);   // 31 of every 32 wavefronts are replays
  std::printf("counters: bank conflicts: starter %.0f, conflicted %.0f (%.2f of shared wavefronts)\n",
              *plain.counters->bank_conflicts, *v.counters->bank_conflicts, *v.counters->bank_conflict_ratio);
}

TEST_CASE("a kernel limited by its registers says so", "[gpu][counters]") {
  if (!test::gpu_or_skip()) return;
  // row_in_registers holding rows of 32768 in 512 threads: 64 floats a thread, 95 to 98 registers
  // (NVRTC, sm_90a), so one block of 16 warps fits an SM by registers where four would by warps.
  // (An earlier version held 48 values in a starter of 1024 threads: ptxas kept it in 31.)
  const std::string* source = variant_source("rmsnorm", "row_in_registers");
  REQUIRE(source);
  std::string heavy = test::starter_with_text(*source, "#define AK_THREADS 256 ", "#define AK_THREADS 512 ");
  heavy = test::starter_with_text(heavy, "#define AK_ROW_CAPACITY 8192 ", "#define AK_ROW_CAPACITY 32768 ");
  const Verdict v = test::judge(rmsnorm_spec(), heavy);
  INFO("registers " << v.registers << ", spilled " << v.spill_bytes << ", block " << v.block_threads);
  require_readings(v, "row_in_registers at 512 threads holding rows of 32768");
  REQUIRE(v.counters->occupancy.has_value());
  const OccupancyLimit& o = *v.counters->occupancy;
  CHECK(v.registers > 64);
  CHECK(o.limiter == "registers");
  CHECK(o.by_registers < o.by_warps);
  CHECK(o.blocks_per_sm == 1);
  CHECK(o.theoretical_pct == Approx(25));
}

TEST_CASE("a user type's candidate gets the counters pass too, its launches judged by the reference process",
          "[gpu][counters]") {
  if (!test::gpu_or_skip()) return;
  const Verdict v = judge_gelu_user_type(true);
  require_readings(v, "the GELU user type's honest file");
  INFO("counters " << counters_of(v));
  CHECK(v.counters->passes <= kCounterPassesOnHopper);
  REQUIRE(v.counters->dram_pct.has_value());
  // 256 MiB read and 256 MiB written by one plain elementwise kernel: DRAM is what it uses most.
  CHECK(*v.counters->dram_pct > 30);
  CHECK(*v.counters->dram_pct <= 100.5);
  REQUIRE(v.counters->occupancy.has_value());
  CHECK(v.counters->occupancy->blocks_per_sm > 0);
  CHECK_FALSE(v.counters->stalls.empty());
  CHECK(v.counters->phases.total() <= v.counters->seconds + 1e-3);
  std::printf("counters: user type gelu 8192x8192 fp32: DRAM %.1f%%, SM %.1f%%, %d passes, the pass %.3f s (%s)\n",
              *v.counters->dram_pct, v.counters->sm_pct.value_or(-1), v.counters->passes, v.counters->seconds,
              phases_of(v.counters->phases).c_str());
}

TEST_CASE("counters turned off for a user type leave its verdict saying so", "[gpu][counters]") {
  if (!test::gpu_or_skip()) return;
  const Verdict v = judge_gelu_user_type(false);
  REQUIRE(v.passed());
  REQUIRE(v.counters.has_value());
  CHECK(v.counters->unavailable.find("[harness] counters = false") != std::string::npos);
  CHECK(v.counters->passes == 0);
}

TEST_CASE("counters turned off leave the verdict saying so", "[gpu][counters]") {
  if (!test::gpu_or_skip()) return;
  EvalRequest r;
  r.kernel_type = "rmsnorm";
  r.source = rmsnorm_spec().starter_source();
  r.time_starter = false;
  r.repetitions = 30;
  r.counters = false;
  auto v = test::evaluator().evaluate(r);
  REQUIRE(v.ok());
  INFO(nlohmann::json(*v).dump(1));
  REQUIRE(v->passed());
  REQUIRE(v->counters.has_value());
  CHECK(v->counters->unavailable.find("[harness] counters = false") != std::string::npos);
}

// The cost: the same evaluations with and without the pass, alternating, the medians of their wall
// times compared (the goal is at most 15% more). Printed for docs/harness-benchmarks.md.
// The goal (at most 15% more) is not met: on an H200 the CUPTI range profiler's session costs about
// 0.21 s around the pass's launches whatever the number of replay passes (docs/harness-benchmarks.md).
// The test still asserts the goal and prints the measurement; [!mayfail] keeps a known miss from
// hiding the other [gpu] results.
TEST_CASE("the counters pass adds little to an evaluation's wall time", "[gpu][counters][overhead][!mayfail]") {
  if (!test::gpu_or_skip()) return;
  for (const char* type : {"rmsnorm", "softmax", "matmul"}) {
    const KernelSpec& spec = *find_spec(type);
    std::vector<double> with, without, pass;
    std::vector<CountersPhases> phases;
    for (int i = 0; i < 5; ++i)
      for (bool counters : {true, false}) {
        EvalRequest r;
        r.kernel_type = type;
        r.source = spec.starter_source();
        r.time_starter = false;
        r.counters = counters;
        const auto t0 = std::chrono::steady_clock::now();
        auto v = test::evaluator().evaluate(r);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        REQUIRE(v.ok());
        INFO(type << ": " << v->message << " counters " << counters_of(*v));
        REQUIRE(v->passed());
        if (i == 0) continue;   // the first of each warms the worker's caches (references, peaks)
        (counters ? with : without).push_back(s);
        if (counters) pass.push_back(v->counters->seconds), phases.push_back(v->counters->phases);
      }
    auto median = [](std::vector<double> x) {
      std::sort(x.begin(), x.end());
      return x[x.size() / 2];
    };
    const double on = median(with), off = median(without), overhead = on / off - 1;
    auto phase = [&](double CountersPhases::*part) {
      std::vector<double> x;
      for (auto& p : phases) x.push_back(p.*part);
      return median(x);
    };
    const CountersPhases typical{phase(&CountersPhases::buffers), phase(&CountersPhases::setup),
                                 phase(&CountersPhases::prepare), phase(&CountersPhases::launch),
                                 phase(&CountersPhases::check),   phase(&CountersPhases::read)};
    std::printf("counters overhead: %s starter at its benchmark shape: evaluation %.3f s with counters, %.3f s "
                "without (+%.1f%%), the pass itself %.3f s (median of %zu); its phases' medians: %s\n",
                type, on, off, 100 * overhead, median(pass), with.size(), phases_of(typical).c_str());
    CHECK(overhead <= 0.15);
  }
}
