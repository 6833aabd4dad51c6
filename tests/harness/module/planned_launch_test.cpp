// A user type's kernel file with a launch plan (ak_launch) through the harness: the contract's
// check and the compile's name expressions on the CPU, a real NVRTC compile of a two-step file,
// and on a GPU (with torch, $AK_REFERENCE_PYTHON) the whole evaluation of planned files.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "harness/compile/candidate_compile.hpp"
#include "harness/compile/kernel_contract.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "harness/evaluation/evaluate.hpp"
#include "harness/judging/benchmark.hpp"
#include "harness/module/kernel_launch.hpp"
#include "harness/module/planned_launch.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"
#include "tests/support.hpp"

using namespace ak;
using Catch::Contains;

namespace {

/// An elementwise user type `name`: out = x * 2 over x[batch_size, dim].
UserTypeSpec doubling_type(const std::string& name, const std::string& dtypes = "\"fp32\", \"fp16\"") {
  const std::string spec = "name = \"" + name + "\"\nreference = \"" + name + ".py\"\nkind = \"elementwise\"\n"
                           "grid = \"elements\"\ndtypes = [" + dtypes + "]\ndims = [\"batch_size\", \"dim\"]\n"
                           "bench = [256, 4096]\nsmoke = [4, 1000]\nsweep = [[64, 4096], [33, 1531]]\n"
                           "edge = [[1, 1], [3, 7]]\n\n"
                           "[[tensor]]\nname = \"x\"\nrole = \"input\"\nshape = [\"batch_size\", \"dim\"]\ntype = \"float\"\n\n"
                           "[[tensor]]\nname = \"out\"\nrole = \"output\"\nshape = [\"batch_size\", \"dim\"]\ntype = \"float\"\n";
  const std::string reference = "import torch\nimport torch.nn as nn\n\nbatch_size = 256\ndim = 4096\n\n"
                                "class Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n"
                                "def get_inputs():\n    return [torch.randn(batch_size, dim)]\n\n"
                                "def get_init_inputs():\n    return []\n";
  auto s = parse_user_type(spec, "types/" + name + ".toml");
  INFO((s.ok() ? "" : s.error().message));
  REQUIRE(s.ok());
  REQUIRE(with_sources(*s, reference, "").ok());
  return *s;
}

/// The parameters every step of a doubling file takes.
const char* kStepParams = "(const T* __restrict__ x, T* __restrict__ out, float* __restrict__ doubled, int batch_size, int dim)";

/// A two-step file of the doubling type: `double_into` writes 2x into the scratch, `store_out`
/// copies the scratch into the output; `plan` replaces the plan's text.
std::string doubling_file(const std::string& plan = "") {
  const std::string text = plan.empty() ? "    \"let n = batch_size * dim;\"\n"
                                          "    \"scratch doubled float[n];\"\n"
                                          "    \"step double_into grid(ceil_div(n, 256)) block(256);\"\n"
                                          "    \"step store_out grid(ceil_div(n, 256)) block(128, 2);\""
                                        : plan;
  return std::string("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                     "extern \"C\" __constant__ char ak_launch[] =\n") + text + ";\n"
         "template <typename T>\n__global__ void double_into" + kStepParams + " {\n"
         "  const long long i = (long long)blockIdx.x * 256 + threadIdx.y * blockDim.x + threadIdx.x;\n"
         "  if (i < (long long)batch_size * dim) doubled[i] = 2.0f * float(x[i]);\n}\n"
         "template <typename T>\n__global__ void store_out" + kStepParams + " {\n"
         "  const long long i = (long long)blockIdx.x * 256 + threadIdx.y * blockDim.x + threadIdx.x;\n"
         "  if (i < (long long)batch_size * dim) out[i] = T(doubled[i]);\n}\n"
         "__device__ void spin_100us() {\n"
         "  unsigned long long t0, t;\n"
         "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
         "  do { asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); } while (t - t0 < 100000ull);\n}\n"
         "template <typename T>\n__global__ void spin_before" + kStepParams + " { spin_100us(); }\n"
         "template <typename T>\n__global__ void spin_after" + kStepParams + " { spin_100us(); }\n";
}

/// Two 100 us spins around the doubling steps.
const char* kSpinPlan = "    \"let n = batch_size * dim;\"\n"
                        "    \"scratch doubled float[n];\"\n"
                        "    \"step spin_before grid(1) block(1);\"\n"
                        "    \"step double_into grid(ceil_div(n, 256)) block(256);\"\n"
                        "    \"step store_out grid(ceil_div(n, 256)) block(128, 2);\"\n"
                        "    \"step spin_after grid(1) block(1);\"";

}  // namespace

TEST_CASE("a planned file keeps the contract without an entry point, and a missing step is named", "[planned_launch]") {
  const KernelSpec spec = user_kernel_spec(doubling_type("plan_contract"));
  CHECK(spec.launch_plans);
  CHECK(contract_violations(doubling_file(), spec).empty());

  std::string missing = doubling_file();
  missing.replace(missing.find("store_out("), 9, "store_two");
  auto v = contract_violations(missing, spec);
  REQUIRE(v.size() == 1);
  CHECK_THAT(v[0], Contains("the step 'store_out' of ak_launch is missing"));

  auto broken = contract_violations(doubling_file("    \"step double_into grid(1) block(1) smem(1, 2);\""), spec);
  REQUIRE(broken.size() == 1);
  CHECK_THAT(broken[0], Contains("smem has 2 values"));
  CHECK_THAT(contract_violations(doubling_file("    PLAN"), spec).at(0), Contains("write ak_launch as string literals only"));

  // A built-in type's launch is its spec's.
  auto builtin = contract_violations(softmax_spec().starter_source() + "\nextern \"C\" __constant__ char ak_launch[] = \"step a grid(1) block(1);\";\n",
                                     softmax_spec());
  REQUIRE(builtin.size() == 1);
  CHECK_THAT(builtin[0], Contains("the file declares ak_launch, and softmax is a built-in type"));
  // Without a plan, a user type's file still needs its entry point.
  CHECK_THAT(contract_violations("__global__ void other() {}", spec).at(0), Contains("'plan_contract_kernel' is missing"));
}

TEST_CASE("a planned file is compiled for every step in every dtype, steps first", "[planned_launch]") {
  const KernelSpec spec = user_kernel_spec(doubling_type("plan_names"));
  CHECK(candidate_name_expressions(spec, doubling_file()) ==
        std::vector<std::string>{"double_into<float>", "double_into<__half>", "store_out<float>", "store_out<__half>"});
  CHECK(candidate_name_expressions(spec, "template <typename T> __global__ void plan_names_kernel() {}") ==
        std::vector<std::string>{"plan_names_kernel<float>", "plan_names_kernel<__half>"});
  // A built-in type's file is compiled for its entry point whatever it declares.
  CHECK(candidate_name_expressions(softmax_spec(), doubling_file()).front() == "softmax_kernel<__half>");
}

TEST_CASE("NVRTC compiles a two-step planned file, each step per dtype, and the step names come back", "[planned_launch][nvrtc]") {
  const KernelSpec spec = user_kernel_spec(doubling_type("plan_nvrtc"));
  auto out = nvrtc_compile(candidate_request(spec, doubling_file(), "plan_nvrtc.cu", "sm_90a"));
  REQUIRE(out.ok());
  INFO(out->log);
  REQUIRE(out->ok);
  REQUIRE(out->functions.size() == 4);
  CHECK(out->functions[0].name_expression == "double_into<float>");
  CHECK(out->functions[3].name_expression == "store_out<__half>");
  for (auto& f : out->functions) CHECK_FALSE(f.lowered_name.empty());
  CHECK(compiled_step_names(*out) == std::vector<std::string>{"double_into", "store_out"});
  CHECK_FALSE(out->cubin.empty());

  // The GPU test's four steps, two of them spinning on the global timer.
  auto four = nvrtc_compile(candidate_request(spec, doubling_file(kSpinPlan), "plan_nvrtc.cu", "sm_90a"));
  REQUIRE(four.ok());
  INFO(four->log);
  REQUIRE(four->ok);
  CHECK(compiled_step_names(*four) == std::vector<std::string>{"spin_before", "double_into", "store_out", "spin_after"});
}

TEST_CASE("a plan that fails at a declared shape is refused before the compile, naming the statement and shape", "[planned_launch]") {
  const UserTypeSpec user = doubling_type("plan_precheck");
  REQUIRE(register_user_type(user).ok());
  const KernelSpec* spec = find_spec("plan_precheck");
  REQUIRE(spec != nullptr);
  auto c = compile_candidate(*spec, doubling_file("    \"let n = batch_size * dim;\"\n"
                                                 "    \"scratch doubled float[n];\"\n"
                                                 "    \"step double_into grid(ceil_div(n, dim - 1)) block(256);\"\n"
                                                 "    \"step store_out grid(ceil_div(n, 256)) block(128, 2);\""),
                             "plan_precheck.cu", "sm_90a");
  REQUIRE(c.ok());
  CHECK_FALSE(c->ok);
  CHECK_THAT(c->message, Contains("the file's launch plan cannot run: at edge shape 1 (batch_size = 1, dim = 1, fp32)") &&
                             Contains("`step double_into grid(ceil_div(n, dim - 1)) block(256);`") &&
                             Contains("division by zero: ceil_div(1, 0)"));
  CHECK(c->output.cubin.empty());   // nothing was compiled
}

TEST_CASE("a launch's time runs from its first step's start to its last step's end", "[planned_launch]") {
  using Span = CuptiKernelTimer::Span;
  // Two launches of a two-step file (a gap of 5 us between its steps), then one of a one-step file.
  const std::vector<Span> spans{{1000, 11000}, {16000, 20000}, {50000, 60000}, {61000, 70000}, {90000, 93000}};
  CHECK(launch_durations_us(spans, {2, 2, 1}) == std::vector<double>{19.0, 20.0, 3.0});
  CHECK(launch_durations_us(spans, {1, 1, 1, 1, 1}) == std::vector<double>{10.0, 4.0, 10.0, 9.0, 3.0});
  // Records missing (CUPTI dropped some): no durations, the timing falls back to events.
  CHECK(launch_durations_us(spans, {2, 2, 2}).empty());
  CHECK(launch_durations_us({}, {1}).empty());
}

TEST_CASE("an evaluation request of a user type carries the scratch cap to the worker", "[planned_launch]") {
  EvalRequest r;
  r.kernel_type = "plan_request";
  r.user_type = doubling_type("plan_request").to_json();
  CHECK(r.scratch_cap_mib == kDefaultScratchCapMib);
  r.scratch_cap_mib = 300;
  const EvalRequest back = nlohmann::json(r).get<EvalRequest>();
  CHECK(back.scratch_cap_mib == 300);
  nlohmann::json huge = r;
  huge["scratch_cap_mib"] = uint64_t(1) << 60;   // never shifted past 64 bits
  CHECK(huge.get<EvalRequest>().scratch_cap_mib == uint64_t(1) << 24);
}

// ---- on a GPU, with torch ($AK_REFERENCE_PYTHON) --------------------------------------------------

namespace {

Harness& plan_harness() {
  static std::unique_ptr<Harness> h = [] {
    auto opened = Harness::open(0);
    REQUIRE(opened.ok());
    return std::move(*opened);
  }();
  return *h;
}

/// The verdict of `source` for `spec` at its first sweep shape in fp32.
Verdict judge_planned(const UserTypeSpec& spec, const std::string& source) {
  EvalRequest r;
  r.kernel_type = spec.name;
  r.user_type = spec.to_json();
  r.source = source;
  r.dtype = "fp32";
  r.shape = spec.sweep.front();
  r.warmup = 2;
  r.repetitions = 12;
  r.time_starter = false;
  r.torch_compile = false;
  Verdict v = plan_harness().evaluate(r);
  INFO(spec.name + ": " + nlohmann::json(v).dump(1));
  INFO("the reference process needs a Python with torch and CUDA: set AK_REFERENCE_PYTHON");
  REQUIRE_FALSE(v.harness_error);
  return v;
}

}  // namespace

TEST_CASE("a two-step file whose second step reads the scratch the first wrote passes", "[gpu][planned_launch]") {
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec spec = doubling_type("plan_gpu_pass");
  const Verdict v = judge_planned(spec, doubling_file());
  INFO(v.message);
  CHECK(v.correctness == Correctness::Pass);
  CHECK(v.stages.size() == 7);
  REQUIRE(v.timing.has_value());
  CHECK(v.timing->median_us > 0);
  CHECK(v.block_threads == 256);
}

TEST_CASE("a file that reads scratch before this launch wrote it (the last launch's) fails", "[gpu][planned_launch][cheat]") {
  // store_out runs first: it reads what double_into wrote in the launch before. The scratch is
  // poisoned before every launch, so what it reads is 0xFF bytes (NaN), never a last answer.
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec spec = doubling_type("plan_gpu_stale");
  const Verdict v = judge_planned(spec, doubling_file("    \"let n = batch_size * dim;\"\n"
                                                     "    \"scratch doubled float[n];\"\n"
                                                     "    \"step store_out grid(ceil_div(n, 256)) block(256);\"\n"
                                                     "    \"step double_into grid(ceil_div(n, 256)) block(256);\""));
  INFO(v.message);
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_stage == "smoke");
}

TEST_CASE("a step whose grid divides by zero at the edge shape is refused before any step runs, naming the expression", "[gpu][planned_launch]") {
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec spec = doubling_type("plan_gpu_zero");
  const Verdict v = judge_planned(spec, doubling_file("    \"let n = batch_size * dim;\"\n"
                                                     "    \"scratch doubled float[n];\"\n"
                                                     "    \"step double_into grid(ceil_div(n, dim - 1)) block(256);\"\n"
                                                     "    \"step store_out grid(ceil_div(n, 256)) block(128, 2);\""));
  CHECK(v.correctness == Correctness::CompileError);
  CHECK(v.failed_stage == "compile");
  CHECK_THAT(v.message, Contains("at edge shape 1 (batch_size = 1, dim = 1, fp32)") &&
                            Contains("\"ceil_div(n, dim - 1)\": division by zero: ceil_div(1, 0)"));
}

TEST_CASE("a plan whose scratch passes the run's cap is refused at load, naming the statement and the shape", "[gpu][planned_launch]") {
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec user = doubling_type("plan_gpu_cap");
  REQUIRE(register_user_type(user).ok());
  const KernelSpec* spec = find_spec("plan_gpu_cap");
  REQUIRE(spec != nullptr);
  auto c = compile_candidate(*spec, doubling_file(), "plan_gpu_cap.cu", plan_harness().gpu().info().arch);
  REQUIRE(c.ok());
  INFO(c->message + "\n" + c->output.log);
  REQUIRE(c->ok);
  // 64 x 4096 floats (1 MiB) fit a cap of 1 MiB; the bench shape's 256 x 4096 do not.
  auto k = LaunchableKernel::candidate(plan_harness().gpu(), *spec, c->output, uint64_t(1) << 20);
  REQUIRE_FALSE(k.ok());
  CHECK_THAT(k.error().message, Contains("at the bench shape (batch_size = 256, dim = 4096, fp32)") &&
                                    Contains("`scratch doubled float[n];`") && Contains("above the cap of 1 MiB"));
  auto fits = LaunchableKernel::candidate(plan_harness().gpu(), *spec, c->output);
  INFO((fits ? "" : fits.error().message));
  REQUIRE(fits.ok());
  CHECK(fits->planned());
  CHECK(fits->steps() == 2);
}

TEST_CASE("a step without the plan's parameters, or a plan the module does not export, is refused at load", "[gpu][planned_launch]") {
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec user = doubling_type("plan_gpu_params");
  REQUIRE(register_user_type(user).ok());
  const KernelSpec* spec = find_spec("plan_gpu_params");
  REQUIRE(spec != nullptr);
  GpuContext& gpu = plan_harness().gpu();
  auto load = [&](const std::string& source) -> std::string {
    auto c = compile_candidate(*spec, source, "plan_gpu_params.cu", gpu.info().arch);
    REQUIRE(c.ok());
    INFO(c->message + "\n" + c->output.log);
    REQUIRE(c->ok);
    auto k = LaunchableKernel::candidate(gpu, *spec, c->output);
    REQUIRE_FALSE(k.ok());
    return k.error().message;
  };
  std::string no_scratch = doubling_file();
  const std::string with = "__global__ void store_out(const T* __restrict__ x, T* __restrict__ out, float* __restrict__ doubled, int batch_size, int dim)";
  REQUIRE(no_scratch.find(with) != std::string::npos);
  no_scratch.replace(no_scratch.find(with), with.size(),
                     "__global__ void store_out(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim) { float* doubled = nullptr;");
  no_scratch.replace(no_scratch.find("{\n  const long long i", no_scratch.find("void store_out")), 1, "");
  CHECK_THAT(load(no_scratch), Contains("store_out<float>: the entry point takes 4 parameters; the harness passes 5: "
                                        "template <typename T> __global__ void store_out(const T* __restrict__ x, T* __restrict__ out, "
                                        "float* __restrict__ doubled, int batch_size, int dim)"));
  std::string hidden = doubling_file();
  const size_t at = hidden.find("extern \"C\" __constant__ char ak_launch");
  hidden.insert(at, "#if 0\n");
  hidden.insert(hidden.find(";\ntemplate", at) + 2, "#endif\n");
  CHECK_THAT(load(hidden), Contains("the module exports none"));
}

TEST_CASE("a planned file's time covers every step and the gaps between them", "[gpu][planned_launch]") {
  // Two steps of 100 us each around the real work: the candidate's time is at least their sum.
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec spec = doubling_type("plan_gpu_time");
  const Verdict v = judge_planned(spec, doubling_file(kSpinPlan));
  INFO(v.message);
  CHECK(v.correctness == Correctness::Pass);
  REQUIRE(v.timing.has_value());
  std::printf("a plan of two 100 us spins around two steps: %.1f us median (%s)\n", v.timing->median_us, v.timing->source.c_str());
  CHECK(v.timing->median_us >= 200);
  CHECK(v.timing->median_us < 2000);
}
