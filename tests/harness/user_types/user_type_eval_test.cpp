// A user type's candidate through the harness: the request that carries the type, its
// registration in the worker, the stage plan, and on a GPU (with torch) the five KernelBench
// examples judged by the reference process.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

#include "daemon/kernelbench/problem_analysis.hpp"
#include "daemon/kernelbench/problem_spec.hpp"
#include "harness/evaluation/evaluate.hpp"
#include "harness/user_types/user_reference.hpp"
#include "harness/user_types/user_stages.hpp"
#include "harness/user_types/user_timing.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"
#include "tests/support.hpp"

using namespace ak;
using Catch::Contains;
using nlohmann::json;

namespace {

/// A spec of the tests' GELU under another name, so that no other test's registration clashes.
UserTypeSpec renamed_gelu(const std::string& name) {
  std::string text = test::kGeluSpec;
  text.replace(text.find("gelu_tanh"), 9, name);
  auto s = parse_user_type(text, "types/" + name + ".toml");
  REQUIRE(s.ok());
  REQUIRE(with_sources(*s, test::kGeluReference, "").ok());
  return *s;
}

}  // namespace

TEST_CASE("an evaluation request carries its user type through JSON and a built-in one carries none", "[user_type_eval]") {
  EvalRequest r;
  r.kernel_type = "eval_gelu_a";
  r.source = "// file";
  r.user_type = renamed_gelu("eval_gelu_a").to_json();
  r.torch_compile = false;
  const json j = r;
  const EvalRequest back = j.get<EvalRequest>();
  CHECK(back.user_type == r.user_type);
  CHECK_FALSE(back.torch_compile);
  auto spec = UserTypeSpec::from_json(back.user_type);
  REQUIRE(spec.ok());
  CHECK(spec->name == "eval_gelu_a");
  CHECK(spec->reference_source == test::kGeluReference);

  EvalRequest builtin;
  builtin.kernel_type = "softmax";
  const json b = builtin;
  CHECK_FALSE(b.contains("user_type"));
  CHECK(b.get<EvalRequest>().user_type.is_null());
}

TEST_CASE("the worker registers a request's user type before it resolves the spec", "[user_type_eval]") {
  EvalRequest r;
  r.kernel_type = "eval_gelu_b";
  r.user_type = renamed_gelu("eval_gelu_b").to_json();
  CHECK(find_spec("eval_gelu_b") == nullptr);
  REQUIRE(register_request_type(r).ok());
  REQUIRE(find_spec("eval_gelu_b") != nullptr);
  REQUIRE(find_user_type("eval_gelu_b") != nullptr);
  CHECK(register_request_type(r).ok());  // the same text again: every request carries it

  EvalRequest other = r;
  other.kernel_type = "softmax";
  CHECK_THAT(register_request_type(other).error().message, Contains("carries the user type 'eval_gelu_b'"));
  EvalRequest broken = r;
  broken.user_type = json{{"path", "x.toml"}};
  CHECK_THAT(register_request_type(broken).error().message, Contains("the request's user type cannot be read"));
  EvalRequest changed = r;
  UserTypeSpec edited = renamed_gelu("eval_gelu_b");
  edited.text += "\n# edited\n";
  changed.user_type = edited.to_json();
  CHECK_FALSE(register_request_type(changed).ok());  // one spec per name in a worker
  EvalRequest builtin;
  builtin.kernel_type = "softmax";
  CHECK(register_request_type(builtin).ok());
}

TEST_CASE("a user type runs the five stages in run_builtin_stages' order over every dtype", "[user_type_eval]") {
  const KernelSpec spec = user_kernel_spec(renamed_gelu("eval_gelu_c"));
  const std::vector<UserStage> plan = user_stage_plan(spec);
  std::vector<std::string> names;
  for (auto& s : plan) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"smoke", "shape sweep", "numerical stability", "determinism", "edge cases"});
  REQUIRE(plan[0].cases.size() == 1);
  CHECK(plan[0].cases[0].shape == Shape{4, 1000});
  CHECK(plan[0].cases[0].dtype == DType::F32);
  CHECK(plan[1].cases.size() == 2 * 2);   // two sweep shapes x fp32, fp16
  CHECK(plan[1].cases[3].dtype == DType::F16);
  REQUIRE(plan[2].cases.size() == 2 * 2); // two scales x two dtypes
  for (auto& c : plan[2].cases) {
    CHECK(c.shape == Shape{64, 4096});
    CHECK(c.scale != 1);
  }
  CHECK_THAT(plan[2].detail, Contains("not among them"));
  CHECK(plan[3].repeats == 3);
  CHECK(plan[3].cases.size() == 2);
  REQUIRE(plan[4].cases.size() == 2 * 2 + 5 * 2);   // two edge shapes, then five recipes, x two dtypes
  CHECK(plan[4].cases[0].inputs.empty());
  CHECK(plan[4].cases[3].inputs.empty());
  for (size_t i = 4; i < plan[4].cases.size(); ++i) {
    CHECK(plan[4].cases[i].shape == Shape{64, 4096});   // the stability shape
    CHECK(plan[4].cases[i].scale == 1);
    CHECK(plan[4].cases[i].inputs == kEdgeRecipes[(i - 4) % 5]);
  }
  CHECK(plan[4].cases[4].dtype == DType::F32);
  CHECK(plan[4].cases[9].dtype == DType::F16);
  CHECK_THAT(plan[4].detail, Contains("random signs"));
  for (int i : {0, 1, 2, 4}) CHECK(plan[size_t(i)].repeats == 1);
  for (int i : {0, 1, 2, 3}) CHECK(plan[size_t(i)].cases[0].inputs.empty());
}

TEST_CASE("a case's inputs are named for the verdict: as drawn, scaled or an edge recipe", "[user_type_eval]") {
  CHECK(inputs_name({{4, 8}, DType::F32}) == "get_inputs()");
  CHECK(inputs_name({{4, 8}, DType::F32, 64}) == "get_inputs() x64");
  CHECK(inputs_name({{4, 8}, DType::F16, 1, "signed"}) == "get_inputs() edge: signed");
}

TEST_CASE("the load request gives the reference process the spec's tensors, fixed globals and tolerances", "[user_type_eval]") {
  auto s = parse_user_type(test::kLogSoftmaxSpec, "types/l.toml");
  REQUIRE(s.ok());
  REQUIRE(with_sources(*s, test::kLogSoftmaxReference, "").ok());
  const json load = load_request(*s, 1);
  CHECK(load["op"] == "load");
  CHECK(load["device"] == 1);
  CHECK(load["dims"] == json{"batch_size", "dim"});
  CHECK(load["fixed"] == json{{"reduce_dim", 1}});
  CHECK(load["tolerance"] == json{{"fp32", 1e-5}});
  REQUIRE(load["tensors"].size() == 2);
  CHECK(load["tensors"][1] == json{{"name", "y"}, {"role", "output"}, {"shape", {"batch_size", "dim"}}, {"type", "float"}});
  CHECK(load["reference_source"] == test::kLogSoftmaxReference);
}

TEST_CASE("the checked timed launches are distinct, among the timed ones, and change with the seed", "[user_type_eval]") {
  auto a = pick_checked_launches(10, 4, 100, 7), b = pick_checked_launches(10, 4, 100, 8);
  REQUIRE(a.size() == 4);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(std::adjacent_find(a.begin(), a.end()) == a.end());
  CHECK(a.front() >= 10);
  CHECK(a.back() < 110);
  CHECK(a != b);
  CHECK(pick_checked_launches(1, 4, 2, 7).size() == 2);
}

TEST_CASE("a verdict keeps the user type's torch.compile time, KernelBench verdict and harness error", "[user_type_eval]") {
  Verdict v;
  v.torch_compile_us = 12.5;
  v.kernelbench_pass = true;
  v.harness_error = true;
  const Verdict back = json(v).get<Verdict>();
  CHECK(back.torch_compile_us == 12.5);
  REQUIRE(back.kernelbench_pass.has_value());
  CHECK(*back.kernelbench_pass);
  CHECK(back.harness_error);
  CHECK_FALSE(json(Verdict{}).contains("kernelbench_pass"));
}

// ---- on a GPU, with torch ($AK_REFERENCE_PYTHON) --------------------------------------------------

namespace {

const std::string kExamples = std::string(AK_SOURCE_DIR) + "/examples/kernelbench/";

/// The spec `autokernel kernelbench` writes for examples/kernelbench/<problem>.py.
UserTypeSpec example_spec(const std::string& problem) {
  const std::string path = kExamples + problem + ".py";
  auto analysis = analyse_problem("python3", path);
  REQUIRE(analysis.ok());
  REQUIRE((*analysis)["accepted"] == true);
  const std::string name = kernelbench_type_name(path);
  auto s = parse_user_type(kernelbench_spec_text(*analysis, name, name + ".py", path), "types/" + name + ".toml");
  INFO((s.ok() ? "" : s.error().message));
  REQUIRE(s.ok());
  REQUIRE(with_sources(*s, test::read_file(path), "").ok());
  return *s;
}

Harness& shared_harness() {
  static std::unique_ptr<Harness> h = [] {
    auto opened = Harness::open(0);
    REQUIRE(opened.ok());
    return std::move(*opened);
  }();
  return *h;
}

/// The verdict of examples/kernelbench/kernels/<problem><suffix>.cu; `small`: timed at the sweep's
/// first shape (the cheating files cheat at the module's own sizes, the spec's bench shape).
/// With `best`, that file is timed beside it as the loop's current best.
Verdict judge(const std::string& problem, const std::string& suffix, bool small, const std::string& source = "",
              const std::string& best = "") {
  const UserTypeSpec spec = example_spec(problem);
  EvalRequest r;
  r.kernel_type = spec.name;
  r.user_type = spec.to_json();
  r.source = source.empty() ? test::read_file(kExamples + "kernels/" + problem + suffix + ".cu") : source;
  r.best_source = best;
  r.dtype = "fp32";
  if (small) r.shape = spec.sweep.front();
  r.warmup = 2;
  r.repetitions = 12;
  r.time_starter = false;
  r.torch_compile = false;  // minutes of autotuning per problem
  Verdict v = shared_harness().evaluate(r);
  INFO(problem + suffix + ": " + json(v).dump(1));
  INFO("the reference process needs a Python with torch and CUDA: set AK_REFERENCE_PYTHON");
  REQUIRE_FALSE(v.harness_error);
  return v;
}

const char* kProblems[] = {"gelu_tanh", "linear_relu", "log_softmax", "residual_layernorm", "sum_middle_dim"};

bool is_stage(const std::string& s) {
  for (const char* n : {"smoke", "shape sweep", "numerical stability", "determinism", "edge cases"})
    if (s == n) return true;
  return false;
}

}  // namespace

TEST_CASE("each KernelBench example's honest kernel passes with a speedup over PyTorch eager", "[gpu][user_type_eval]") {
  if (!test::gpu_or_skip()) return;
  for (const char* problem : kProblems) {
    Verdict v = judge(problem, "", true);
    INFO(std::string(problem) + ": " + v.message);
    CHECK(v.correctness == Correctness::Pass);
    CHECK(v.stages.size() == 7);   // compile, the five stages, benchmark
    CHECK(v.baseline_source == "PyTorch eager");
    CHECK(v.reference_us > 0);
    CHECK(v.speedup > 0);
    CHECK(v.kernelbench_pass == std::optional<bool>(true));
  }
}

TEST_CASE("each KernelBench example's wrong kernel fails a named stage", "[gpu][user_type_eval]") {
  if (!test::gpu_or_skip()) return;
  for (const char* problem : kProblems) {
    Verdict v = judge(problem, ".wrong", true);
    INFO(std::string(problem) + ": " + v.message);
    CHECK(v.correctness == Correctness::Fail);
    CHECK(is_stage(v.failed_stage));
  }
}

TEST_CASE("each KernelBench example's cheating kernel fails", "[gpu][user_type_eval][cheat]") {
  if (!test::gpu_or_skip()) return;
  for (const char* problem : kProblems) {
    Verdict v = judge(problem, ".cheating", false);
    INFO(std::string(problem) + ": " + v.message);
    CHECK(v.correctness != Correctness::Pass);
    CHECK_FALSE(v.failed_stage.empty());
  }
}

TEST_CASE("a user type's kernel that skips rows whose output already holds a number gains nothing beside the honest one",
          "[gpu][user_type_eval][cheat]") {
  // The stale-output cheat of the built-in suite, on the log-softmax problem: the reference process
  // fills its whole pool with 0xFF (NaN) before every launch, so the skip is never taken.
  if (!test::gpu_or_skip()) return;
  const std::string honest = test::read_file(kExamples + "kernels/log_softmax.cu");
  const std::string anchor = "if (row >= batch_size) return;  // the whole block leaves together\n";
  REQUIRE(honest.find(anchor) != std::string::npos);
  std::string cheat = honest;
  cheat.replace(cheat.find(anchor), anchor.size(),
                anchor + "  if ((row & 3) == 0) {\n    const float held = ak_to_float(out[row * dim]);\n"
                         "    if (held == held) return;  // not NaN: an earlier launch's answer\n  }\n");
  Verdict v = judge("log_softmax", "", false, cheat, honest);
  CHECK(v.correctness == Correctness::Pass);
  REQUIRE(v.paired.pairs > 0);
  CHECK(v.paired.ratio > 0.9);
  CHECK_FALSE(v.paired.clears(0.01));
  std::printf("log_softmax stale-output cheat beside the honest file: ratio %.4f +- %.4f over %d pairs\n", v.paired.ratio,
              v.paired.noise, v.paired.pairs);
}

TEST_CASE("many user types judged in one worker leave the GPU's memory where the first left it", "[gpu][user_type_eval]") {
  // Seen: six KernelBench problems in one run (one worker) ran out of memory, an honest file
  // reverted for it: every type kept a reference process of its own, each with its context, its
  // pool and PyTorch's cached memory. Now a worker keeps one at a time.
  if (!test::gpu_or_skip()) return;
  GpuContext& gpu = shared_harness().gpu();
  std::vector<size_t> used;
  for (int round = 0; round < 2; ++round)
    for (const char* problem : kProblems) {
      Verdict v = judge(problem, "", true);
      INFO(std::string(problem) + ": " + v.message);
      CHECK(v.correctness == Correctness::Pass);
      used.push_back(gpu.used_bytes());
      std::printf("after %s (round %d): %.0f MiB of the GPU in use\n", problem, round + 1, double(used.back()) / (1 << 20));
    }
  // The first round's largest: every later evaluation, of any type, fits under it (within 256 MiB
  // of what a context's own bookkeeping may move).
  const size_t first_round = *std::max_element(used.begin(), used.begin() + long(std::size(kProblems)));
  for (size_t i = std::size(kProblems); i < used.size(); ++i) CHECK(used[i] <= first_round + (size_t(256) << 20));
}

TEST_CASE("a user type's kernel that counts its launches in the pool's tail never counts", "[gpu][user_type_eval][cheat]") {
  // The pool's bytes past its last tensor up to the allocation's end were written by no one: a
  // counter there (found from the kernel's own last pointer and the public layout rule) survived
  // every launch. The pool is whole pages now, every byte written before each launch.
  if (!test::gpu_or_skip()) return;
  const std::string honest = test::read_file(kExamples + "kernels/gelu_tanh.cu");
  const std::string anchor = "  const long long n = (long long)batch_size * dim;\n";
  REQUIRE(honest.find(anchor) != std::string::npos);
  std::string cheat = honest;
  cheat.replace(cheat.find(anchor), anchor.size(),
                anchor + "  const unsigned long long end = (unsigned long long)(out + n);\n"
                         "  unsigned* memo = (unsigned*)(((end + (2ull << 20) - 1) & ~((2ull << 20) - 1)) - 4);\n"
                         "  const bool slack = (end & ((2ull << 20) - 1)) != 0;\n"
                         "  if (slack && blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(memo, 1u);\n"
                         "  const unsigned seen = *(volatile unsigned*)memo;  // read once: block 0 may add between two reads\n"
                         "  if (slack && seen > 3 && seen < 0x7fffffffu) return;\n");
  Verdict v = judge("gelu_tanh", "", true, cheat);
  std::printf("a counter in the pool's tail: %s: %s\n", correctness_name(v.correctness), v.message.c_str());
  CHECK(v.correctness == Correctness::Pass);  // it never reached 3: every launch computed, and was checked doing so
}

// ---- honest verdicts: inputs that tell ops apart, overflow judged in the output's dtype ----------

namespace {

/// An elementwise user type `name` over x[batch_size, dim] -> out, in `dtype`, whose reference's
/// forward returns `forward` and whose get_inputs() draws `draw` (KernelBench's convention).
UserTypeSpec elementwise_type(const std::string& name, const std::string& dtype, const std::string& forward,
                              const std::string& draw) {
  const std::string spec = "name = \"" + name + "\"\nreference = \"" + name + ".py\"\nkind = \"elementwise\"\n"
                           "grid = \"elements\"\ndtypes = [\"" + dtype + "\"]\ndims = [\"batch_size\", \"dim\"]\n"
                           "bench = [256, 4096]\nsmoke = [4, 1000]\nsweep = [[64, 4096], [33, 1531]]\n"
                           "edge = [[1, 1], [3, 7]]\n\n"
                           "[[tensor]]\nname = \"x\"\nrole = \"input\"\nshape = [\"batch_size\", \"dim\"]\ntype = \"float\"\n\n"
                           "[[tensor]]\nname = \"out\"\nrole = \"output\"\nshape = [\"batch_size\", \"dim\"]\ntype = \"float\"\n";
  const std::string reference = "import torch\nimport torch.nn as nn\n\nbatch_size = 256\ndim = 4096\n\n"
                                "class Model(nn.Module):\n    def forward(self, x):\n        return " + forward + "\n\n"
                                "def get_inputs():\n    return [" + draw + "]\n\n"
                                "def get_init_inputs():\n    return []\n";
  auto s = parse_user_type(spec, "types/" + name + ".toml");
  INFO((s.ok() ? "" : s.error().message));
  REQUIRE(s.ok());
  REQUIRE(with_sources(*s, reference, "").ok());
  return *s;
}

/// A kernel file of such a type: out[i] = `expr` of the float v = x[i], stored in T (rounded to nearest).
std::string elementwise_file(const std::string& name, const std::string& expr) {
  return "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
         "extern \"C\" __constant__ int ak_block_threads = 256;\n"
         "__device__ __forceinline__ float ak_f(__half v) { return __half2float(v); }\n"
         "__device__ __forceinline__ float ak_f(__nv_bfloat16 v) { return __bfloat162float(v); }\n"
         "__device__ __forceinline__ float ak_f(float v) { return v; }\n"
         "__device__ __forceinline__ void ak_put(__half* p, float v) { *p = __float2half_rn(v); }\n"
         "__device__ __forceinline__ void ak_put(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }\n"
         "__device__ __forceinline__ void ak_put(float* p, float v) { *p = v; }\n"
         "template <typename T>\n__global__ void " + name + "_kernel(const T* __restrict__ x, T* __restrict__ out, "
         "int batch_size, int dim) {\n"
         "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i >= (long long)batch_size * dim) return;\n"
         "  const float v = ak_f(x[i]);\n"
         "  ak_put(out + i, " + expr + ");\n}\n";
}

/// The verdict of `source` for `spec` at its first sweep shape, in its first dtype.
Verdict judge_type(const UserTypeSpec& spec, const std::string& source) {
  EvalRequest r;
  r.kernel_type = spec.name;
  r.user_type = spec.to_json();
  r.source = source;
  r.dtype = dtype_name(spec.dtypes.front());
  r.shape = spec.sweep.front();
  r.warmup = 2;
  r.repetitions = 12;
  r.time_starter = false;
  r.torch_compile = false;
  Verdict v = shared_harness().evaluate(r);
  INFO(spec.name + ": " + json(v).dump(1));
  INFO("the reference process needs a Python with torch and CUDA: set AK_REFERENCE_PYTHON");
  REQUIRE_FALSE(v.harness_error);
  return v;
}

}  // namespace

TEST_CASE("a plain copy submitted as ReLU on torch.rand inputs fails at the edge stage's signed inputs",
          "[gpu][user_type_eval][cheat]") {
  // KernelBench's ReLU draws torch.rand (all >= 0), where a copy is right: every stage of get_inputs()
  // passes it. The edge recipes give the inputs signs.
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec relu = elementwise_type("edge_relu_copy", "fp32", "torch.relu(x)",
                                             "torch.rand(batch_size, dim)");
  const Verdict honest = judge_type(relu, elementwise_file(relu.name, "fmaxf(v, 0.f)"));
  INFO(honest.message);
  CHECK(honest.correctness == Correctness::Pass);

  const Verdict copy = judge_type(relu, elementwise_file(relu.name, "v"));
  INFO(copy.message);
  CHECK(copy.correctness == Correctness::Fail);
  CHECK(copy.failed_stage == "edge cases");
  CHECK(copy.failed_input == "get_inputs() edge: signed");
  CHECK_THAT(copy.message, Contains("edge inputs: signed") && Contains("elements differ"));
}

TEST_CASE("an all-zero output fails where the reference's small values vary, though within the tolerance",
          "[gpu][user_type_eval][cheat]") {
  // KernelBench's open blind spot: zeros pass allclose(atol=1e-2) where every output is small.
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec small = elementwise_type("edge_small_zeros", "fp32", "x * 1e-6", "torch.randn(batch_size, dim)");
  const Verdict zeros = judge_type(small, elementwise_file(small.name, "0.f"));
  INFO(zeros.message);
  CHECK(zeros.correctness == Correctness::Fail);
  CHECK(zeros.failed_stage == "smoke");
  CHECK_THAT(zeros.message, Contains("a constant output never passes where the reference is not constant"));
  CHECK(zeros.kernelbench_pass == std::optional<bool>(false));
}

TEST_CASE("an honest fp16 square passes numerical stability, where x64 inputs overflow to inf as PyTorch's fp16 does",
          "[gpu][user_type_eval]") {
  if (!test::gpu_or_skip()) return;
  const UserTypeSpec square = elementwise_type("honest_fp16_square", "fp16", "x * x", "torch.randn(batch_size, dim)");
  const Verdict v = judge_type(square, elementwise_file(square.name, "v * v"));
  INFO(v.message);
  CHECK(v.correctness == Correctness::Pass);
  REQUIRE(v.stages.size() == 7);
  CHECK(v.stages[3].name == "numerical stability");
  CHECK(v.stages[3].passed);

  // A kernel that saturates at fp16's max instead of overflowing is not what PyTorch returns.
  const Verdict saturating = judge_type(square, elementwise_file(square.name, "fminf(v * v, 65504.f)"));
  INFO(saturating.message);
  CHECK(saturating.correctness == Correctness::Fail);
  CHECK(saturating.failed_stage == "numerical stability");
}
