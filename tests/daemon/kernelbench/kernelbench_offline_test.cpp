// KernelBench without an LLM: a problem that computes a built-in type is matched by running both
// references (never by names) and written as that type's entry, linked to the problem; an
// elementwise chain gets a first kernel file written from its ops, which NVRTC compiles; and
// `kernelbench --offline` writes a config the builtin tuner can run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "daemon/kernelbench/builtin_problem.hpp"
#include "daemon/kernelbench/elementwise_starter.hpp"
#include "daemon/kernelbench/problem_analysis.hpp"
#include "daemon/kernelbench/problem_baselines.hpp"
#include "daemon/kernelbench/problem_spec.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"
#include "tests/support.hpp"

using namespace ak;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kExamples = std::string(AK_SOURCE_DIR) + "/examples/kernelbench/";

bool torch_or_skip() {
  static const bool has = python_available("python3") && std::system("python3 -c 'import torch' >/dev/null 2>&1") == 0;
  if (!has) WARN("SKIPPED: python3 has no torch (pip install torch); the KernelBench analyser runs each problem with it");
  return has;
}

/// A problem in KernelBench's format: `init` is __init__'s body after super(), `forward` its
/// signature and body, `inputs` get_inputs()'s list.
std::string problem(const std::string& init, const std::string& forward, const std::string& globals,
                    const std::string& inputs) {
  return "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
         "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n" +
         (init.empty() ? "" : "        " + init + "\n") + "    def " + forward + "\n\n" + globals +
         "\n\ndef get_inputs():\n    return " + inputs + "\n\ndef get_init_inputs():\n    return []\n";
}

/// The analyses of several problems written into `dir`, from one analyser call.
std::vector<json> analyse_all(const test::TempDir& dir, const std::vector<std::pair<std::string, std::string>>& problems) {
  std::vector<std::string> paths;
  for (auto& [name, text] : problems) paths.push_back(dir.write(name, text));
  auto all = analyse_problems_in_parallel("python3", paths, 2);
  REQUIRE(all.ok());
  std::vector<json> out;
  for (size_t i = 0; i < all->size(); ++i) {
    INFO(paths[i]);
    REQUIRE((*all)[i].ok());
    INFO((*all)[i]->dump());
    REQUIRE((*all)[i]->value("accepted", false));
    out.push_back(*(*all)[i]);
  }
  return out;
}

const std::string kRows = "batch_size = 64\ndim = 1000";
const std::string kRows3 = "batch_size = 16\nrows = 24\ndim = 300";

/// NVRTC compiles `source` for the user type `name` in every dtype; the log where it does not.
void check_compiles(const std::string& source, const std::string& name) {
  CompileRequest req{source, name + ".cu", {}, "sm_90a"};
  for (const char* d : {"float", "__half", "__nv_bfloat16"}) req.name_expressions.push_back(name + "_kernel<" + d + ">");
  auto out = nvrtc_compile(req);
  REQUIRE(out.ok());
  INFO(source);
  INFO(out->log);
  CHECK(out->ok);
  CHECK(out->functions.size() == 3);
}

}  // namespace

TEST_CASE("a problem that computes a built-in type is matched by its outputs, with its arguments mapped", "[kernelbench][offline]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  const auto a = analyse_all(dir, {
      {"softmax.py", problem("", "forward(self, x):\n        return torch.softmax(x, dim=1)", kRows,
                             "[torch.rand(batch_size, dim)]")},
      // keepdim over the last axis: the same elements in the same order as the type's [rows] output
      {"sum_keepdim.py", problem("", "forward(self, x):\n        return torch.sum(x, dim=-1, keepdim=True)", kRows3,
                                 "[torch.rand(batch_size, rows, dim)]")},
      {"rmsnorm.py", problem("self.weight = nn.Parameter(torch.ones(dim))",
                             "forward(self, x):\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight",
                             kRows, "[torch.randn(batch_size, dim)]")},
      // the targets first, the logits second: the mapping follows the values, not the order
      {"ce.py", problem("", "forward(self, targets, logits):\n        return F.cross_entropy(logits, targets)", kRows,
                        "[torch.randint(0, dim, (batch_size,)), torch.rand(batch_size, dim)]")},
      // up first, gate second
      {"swiglu.py", problem("", "forward(self, up, gate):\n        return F.silu(gate) * up", kRows,
                            "[torch.randn(batch_size, dim), torch.randn(batch_size, dim)]")},
      // the norm over the last two axes of a 3-D input, its weight of their shape
      {"layernorm.py", problem("self.ln = nn.LayerNorm((rows, dim))", "forward(self, x):\n        return self.ln(x)",
                               kRows3, "[torch.randn(batch_size, rows, dim)]")},
      // a GEMM as nn.Linear computes it: y = x W^T + b, W [N, K]
      {"linear.py", problem("self.fc = nn.Linear(dim, 200)", "forward(self, x):\n        return self.fc(x)", kRows,
                            "[torch.rand(batch_size, dim)]")},
      // the transposed operand passed as an input, second
      {"matmul_bt.py", problem("", "forward(self, A, B):\n        return torch.matmul(A, B.T)", kRows + "\nn = 96",
                               "[torch.rand(batch_size, dim), torch.rand(n, dim)]")},
  });
  auto builtin = [&](size_t i) { return a[i]["builtin"]; };
  CHECK(builtin(0)["type"] == "softmax");
  CHECK(builtin(0)["shape"] == json::array({64, 1000}));
  CHECK(builtin(0)["args"] == json{{"x", "x"}});
  CHECK(builtin(0)["outputs"] == json{{"y", "out"}});
  CHECK(builtin(1)["type"] == "reduce");
  CHECK(builtin(1)["shape"] == json::array({16 * 24, 300}));
  CHECK(builtin(2)["type"] == "rmsnorm");
  CHECK(builtin(2)["args"] == json{{"x", "x"}, {"weight", "weight"}});
  CHECK(builtin(3)["type"] == "cross_entropy");
  CHECK(builtin(3)["args"] == json{{"logits", "logits"}, {"target", "targets"}});
  CHECK(builtin(3)["outputs"] == json{{"mean", "out"}});
  CHECK(builtin(4)["type"] == "swiglu");
  CHECK(builtin(4)["args"] == json{{"gate", "gate"}, {"up", "up"}});
  CHECK(builtin(4)["shape"] == json::array({64, 1000, 1000}));   // rows, cols and the row stride of dense operands
  CHECK(builtin(5)["type"] == "layernorm");
  CHECK(builtin(5)["cols_axes"] == 2);
  CHECK(builtin(5)["shape"] == json::array({16, 24 * 300}));
  CHECK(builtin(5)["args"] == json{{"x", "x"}, {"weight", "ln.weight"}, {"bias", "ln.bias"}});
  CHECK(builtin(6)["type"] == "matmul");
  CHECK(builtin(6)["shape"] == json::array({64, 200, 1000, 1}));   // M, N, K, has_bias
  CHECK(builtin(6)["args"] == json{{"x", "x"}, {"w", "fc.weight"}, {"bias", "fc.bias"}});
  CHECK(builtin(7)["shape"] == json::array({64, 96, 1000, 0}));
  CHECK(builtin(7)["args"] == json{{"x", "A"}, {"w", "B"}});
}

TEST_CASE("a near miss of a built-in type is not matched", "[kernelbench][offline]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  const auto a = analyse_all(dir, {
      {"softmax_axis1.py", problem("", "forward(self, x):\n        return torch.softmax(x, dim=1)", kRows3,
                                   "[torch.rand(batch_size, rows, dim)]")},
      {"scaled_softmax.py", problem("", "forward(self, x):\n        return torch.softmax(x * 2.0, dim=-1)", kRows,
                                    "[torch.rand(batch_size, dim)]")},
      {"log_softmax.py", problem("", "forward(self, x):\n        return torch.log_softmax(x, dim=-1)", kRows,
                                 "[torch.rand(batch_size, dim)]")},
      {"sum_middle.py", problem("", "forward(self, x):\n        return torch.sum(x, dim=1, keepdim=True)", kRows3,
                                "[torch.rand(batch_size, rows, dim)]")},
      {"mean_last.py", problem("", "forward(self, x):\n        return torch.mean(x, dim=-1)", kRows,
                               "[torch.rand(batch_size, dim)]")},
      // rmsnorm's eps is 1e-6: 1e-5 is another function
      {"rmsnorm_eps.py", problem("self.weight = nn.Parameter(torch.ones(dim))",
                                 "forward(self, x):\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight",
                                 kRows, "[torch.randn(batch_size, dim)]")},
      // a weight the forward ignores: ones at construction, random in the comparison
      {"rmsnorm_unweighted.py", problem("self.weight = nn.Parameter(torch.ones(dim))",
                                        "forward(self, x):\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)",
                                        kRows, "[torch.randn(batch_size, dim)]")},
      {"ce_sum.py", problem("", "forward(self, logits, targets):\n        return F.cross_entropy(logits, targets, reduction='sum')",
                            kRows, "[torch.rand(batch_size, dim), torch.randint(0, dim, (batch_size,))]")},
      // A @ B with both square: B is [K, N], not the Linear's [N, K]
      {"matmul_square.py", problem("", "forward(self, A, B):\n        return torch.matmul(A, B)", "n = 256",
                                   "[torch.rand(n, n), torch.rand(n, n)]")},
  });
  for (const json& x : a) {
    INFO(x["file"]);
    CHECK(x["builtin"].is_null());
    CHECK(x["builtin_why_not"].is_string());
  }
}

TEST_CASE("a matched problem becomes the type's [[kernel]] entry, linked to the problem", "[kernelbench][offline]") {
  json a = {{"builtin", {{"type", "softmax"}, {"cols_axes", 1}, {"args", {{"x", "x"}}}, {"outputs", {{"y", "out"}}},
                         {"shape", {4096, 393216}}}}};
  auto p = builtin_problem_of(a, "level1/23_Softmax.py", "types/kb_23_softmax.toml");
  REQUIRE(p.ok());
  CHECK(p->shape == std::vector<long long>{4096, 393216});
  CHECK(p->mapping == "x=x; y=out; cols = the last 1 axes");
  auto q = builtin_problem_of(a, "other/softmax.py", "types/kb_softmax.toml");
  REQUIRE(q.ok());
  auto r = builtin_problem_of({{"builtin", {{"type", "reduce"}, {"shape", {8, 16}}}}}, "sum.py", "types/kb_sum.toml");
  REQUIRE(r.ok());
  std::vector<BuiltinProblem> all{*p, *q, *r};
  assign_builtin_tags(all);
  // as the run tags them (daemon/run_folder/kernel_progress.cpp): several entries of a type are numbered
  CHECK(all[0].tag == "softmax-1");
  CHECK(all[1].tag == "softmax-2");
  CHECK(all[2].tag == "reduce");
  const std::string entry = builtin_entry_text(all[0], "0.3333");
  CHECK_THAT(entry, Catch::Contains("[[kernel]]\ntype = \"softmax\"\nshape = [4096, 393216]\ndtype = \"fp32\"\nweight = 0.3333\n"));
  CHECK_THAT(entry, Catch::Contains("# KernelBench problem level1/23_Softmax.py computes softmax (x=x; y=out"));

  test::TempDir dir;
  const std::string links = dir.write("kb.builtin.tsv", builtin_problems_text(all));
  auto back = read_builtin_problems(links);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 3);
  CHECK((*back)[0].tag == "softmax-1");
  CHECK((*back)[0].shape == std::vector<long long>{4096, 393216});
  CHECK((*back)[0].spec == "types/kb_23_softmax.toml");
  CHECK((*back)[2].type == "reduce");
  auto bad = read_builtin_problems(dir.write("bad.tsv", "tag\ttype\tshape\tdtype\tproblem\tspec\tmapping\nsoftmax\tnot_a_type\t4x4\tfp32\ta\tb\tc\n"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("line 2"));

  SECTION("a GEMM becomes matmul's entry only where matmul takes the Linear layout (version 2) in fp32") {
    const KernelSpec* matmul = find_builtin_spec("matmul");
    REQUIRE(matmul);
    const bool linear_fp32 = matmul->contract_version >= 2 &&
                             std::count(matmul->dtypes.begin(), matmul->dtypes.end(), DType::F32) == 1;
    auto gemm = builtin_problem_of({{"builtin", {{"type", "matmul"}, {"args", {{"x", "A"}, {"w", "B"}}}, {"shape", {2048, 4096, 8192, 0}}}}},
                                   "17_Matmul_with_transposed_B.py", "types/kb_17.toml");
    CHECK(gemm.ok() == linear_fp32);
  }
  SECTION("no match, a type that is not built in, a dtype or a shape the type does not take: no entry") {
    CHECK_FALSE(builtin_problem_of({{"builtin", nullptr}, {"builtin_why_not", "x"}}, "p.py", "s.toml").ok());
    CHECK_FALSE(builtin_problem_of({{"builtin", {{"type", "kb_gelu"}, {"shape", {4, 4}}}}}, "p.py", "s.toml").ok());
    CHECK_FALSE(builtin_problem_of({{"builtin", {{"type", "softmax"}, {"shape", {4, 4, 4}}}}}, "p.py", "s.toml").ok());
    CHECK_FALSE(builtin_problem_of({{"builtin", {{"type", "flash_attention"}, {"shape", {1, 1, 64, 64}}}}}, "p.py", "s.toml").ok());
    CHECK_FALSE(builtin_problem_of({{"builtin", {{"type", "softmax"}, {"shape", {1, 1LL << 32}}}}}, "p.py", "s.toml").ok());
  }
}

TEST_CASE("the problems' PyTorch times are read back as written, and a damaged line is named", "[kernelbench][offline]") {
  test::TempDir dir;
  std::vector<ProblemBaseline> b{{"softmax", 4120.5, 3980.25, ""}, {"layernorm", 310, 0, "torch.compile: failed"}};
  auto back = read_problem_baselines(dir.write("kb.baselines.tsv", problem_baselines_text(b)));
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].eager_us == Approx(4120.5));
  CHECK((*back)[0].compile_us == Approx(3980.25));
  CHECK((*back)[1].note == "torch.compile: failed");
  auto bad = read_problem_baselines(dir.write("bad.tsv", "tag\teager_us\tcompile_us\tnote\nsoftmax\tfast\t1\t\n"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("line 2"));
}

TEST_CASE("every op of an elementwise chain is written as CUDA that NVRTC compiles", "[kernelbench][offline][nvrtc]") {
  // One analysis with a step of every op the generator knows, chained, over two inputs.
  auto v = [](int i) { return json{{"v", i}}; };
  auto n = [](double x) { return json{{"n", x}}; };
  json steps = json::array();
  int value = 2;
  auto add = [&](const std::string& op, json args) {
    steps.push_back({{"op", op}, {"args", args}});
    return value++;
  };
  int last = add("add", {v(0), v(1)});
  for (const char* op : {"neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "erf",
                         "sin", "cos", "reciprocal", "silu", "mish", "hardsigmoid", "hardswish", "gelu_erf", "gelu_tanh"})
    last = add(op, {v(last)});
  for (const char* op : {"sub", "mul", "div", "maximum", "minimum"}) last = add(op, {v(last), v(1)});
  last = add("pow", {v(last), n(3.0)});
  last = add("pow", {n(2.0), v(last)});
  last = add("leaky_relu", {v(last), n(0.01)});
  last = add("elu", {v(last), n(1.6732632423543772), n(1.0507009873554805), n(1.0)});
  last = add("softplus", {v(last), n(1.0), n(20.0)});
  last = add("clamp", {v(last), n(-1.0), json{{"none", true}}});
  last = add("clamp", {v(last), json{{"none", true}}, n(1e30)});
  last = add("threshold", {v(last), n(0.5), n(-std::numeric_limits<double>::infinity())});
  last = add("mul", {v(last), n(3.14)});
  json a = {{"grid", "elements"}, {"dims", {"batch_size", "dim"}}, {"fixed", {{"axis", 1}}},
            {"inputs", {{{"name", "x"}, {"shape", {"batch_size", "dim"}}}, {{"name", "y"}, {"shape", {"batch_size", "dim"}}}}},
            {"parameters", json::array()}, {"buffers", json::array()},
            {"outputs", {{{"name", "out"}, {"shape", {"batch_size", "dim", "axis"}}}}},
            {"elementwise", {{"steps", steps}, {"output", last}, {"inputs", 2}}}};
  auto text = elementwise_starter_text(a, "kb_chain");
  INFO((text.ok() ? std::string() : text.error().message));
  REQUIRE(text.ok());
  CHECK_THAT(*text, Catch::Contains("#define AK_THREADS 256\n#define AK_ITEMS 4\n"));
  CHECK_THAT(*text, Catch::Contains("kb_chain_kernel(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, int batch_size, int dim)"));
  CHECK_THAT(*text, Catch::Contains("const long long n = 1LL * (long long)batch_size * (long long)dim * 1LL;"));
  CHECK_THAT(*text, Catch::Contains("ak_leaky_relu(v"));
  CHECK_THAT(*text, Catch::Contains("__int_as_float(0xff800000)"));
  check_compiles(*text, "kb_chain");

  SECTION("an op, an operand or a size it does not know: no file, and why") {
    json unknown = a;
    unknown["elementwise"]["steps"][0]["op"] = "atan2";
    auto e = elementwise_starter_text(unknown, "kb_chain");
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.error().message, Catch::Contains("\"atan2\""));
    json later = a;
    later["elementwise"]["steps"][0]["args"][0] = v(5);   // a value not computed yet
    CHECK_FALSE(elementwise_starter_text(later, "kb_chain").ok());
    json expression = a;
    expression["outputs"][0]["shape"] = {"batch_size", "(dim + 1) / 2"};
    CHECK_FALSE(elementwise_starter_text(expression, "kb_chain").ok());
    json none = a;
    none.erase("elementwise");
    none["elementwise_why_not"] = "its kind is rowwise, not elementwise";
    auto why = elementwise_starter_text(none, "kb_chain");
    REQUIRE_FALSE(why.ok());
    CHECK_THAT(why.error().message, Catch::Contains("its kind is rowwise"));
  }
}

TEST_CASE("an elementwise problem's chain is read from its forward, checked against it, and compiles", "[kernelbench][offline][nvrtc]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  const auto a = analyse_all(dir, {
      {"new_gelu.py", problem("", "forward(self, x):\n        return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * "
                                  "torch.pow(x, 3.0))))", kRows, "[torch.rand(batch_size, dim)]")},
      {"softsign.py", problem("", "forward(self, x):\n        return x / (1 + torch.abs(x))", kRows, "[torch.rand(batch_size, dim)]")},
      {"residual.py", problem("", "forward(self, x, y):\n        return torch.clamp(x * 0.5 + y, min=-1.0, max=1.0)", kRows,
                              "[torch.rand(batch_size, dim), torch.rand(batch_size, dim)]")},
      {"scalar.py", problem("", "forward(self, A, s):\n        return A * s", kRows, "[torch.rand(batch_size, dim), 3.14]")},
      {"selu.py", problem("", "forward(self, x):\n        return torch.selu(x)", kRows, "[torch.rand(batch_size, dim)]")},
      // a broadcast bias: not a chain over the output's elements
      {"bias.py", problem("self.bias = nn.Parameter(torch.ones(dim))", "forward(self, x):\n        return x + self.bias", kRows,
                          "[torch.rand(batch_size, dim)]")},
      // an op the recorder does not know
      {"atan.py", problem("", "forward(self, x):\n        return torch.atan(x)", kRows, "[torch.rand(batch_size, dim)]")},
  });
  for (size_t i = 0; i < 5; ++i) {
    INFO(a[i]["file"]);
    INFO(a[i].value("elementwise_why_not", json()).dump());
    REQUIRE(a[i]["elementwise"].is_object());
    const std::string name = "kb_" + fs::path(a[i]["file"].get<std::string>()).stem().string();
    auto text = elementwise_starter_text(a[i], name);
    REQUIRE(text.ok());
    check_compiles(*text, name);
  }
  CHECK(a[0]["elementwise"]["steps"].size() == 8);
  CHECK(a[3]["elementwise"]["steps"][0] == json{{"op", "mul"}, {"args", {{{"v", 0}}, {{"n", 3.14}}}}});
  CHECK(a[4]["elementwise"]["steps"][0]["op"] == "elu");
  CHECK(a[5]["elementwise"].is_null());
  CHECK(a[6]["elementwise"].is_null());
  CHECK_THAT(a[6]["elementwise_why_not"].get<std::string>(), Catch::Contains("aten.atan"));
}

TEST_CASE("kernelbench --offline writes built-in entries, first files, and leaves out what needs an LLM", "[kernelbench][offline]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  const std::string softmax = dir.write("softmax.py", problem("", "forward(self, x):\n        return torch.softmax(x, dim=-1)",
                                                              kRows, "[torch.rand(batch_size, dim)]"));
  auto r = test::run_autokernel("kernelbench " + softmax + " " + kExamples + "gelu_tanh.py " + kExamples +
                                "linear_relu.py --offline --out " + (dir.path / "kb.toml").string());
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("softmax.py: accepted (rowwise) as kb_softmax"));
  CHECK_THAT(r.out, Catch::Contains("runs as the built-in softmax [64, 1000] fp32 (x=x; y=out"));
  CHECK_THAT(r.out, Catch::Contains("gelu_tanh.py: accepted (elementwise) as kb_gelu_tanh"));
  CHECK_THAT(r.out, Catch::Contains("first file kb_gelu_tanh.cu written from its elementwise ops"));
  CHECK_THAT(r.out, Catch::Contains("linear_relu.py: refused: needs an LLM"));
  CHECK_THAT(r.out, Catch::Contains("2 accepted, 1 refused or left out for needing an LLM (1 as built-in types, 1 with a first file"));
  const std::string config = test::read_file((dir.path / "kb.toml").string());
  CHECK_THAT(config, Catch::Contains("[[kernel]]\nspec = \"types/kb_gelu_tanh.toml\"\ndtype = \"fp32\"\nweight = 0.5000\n"));
  CHECK_THAT(config, Catch::Contains("[[kernel]]\ntype = \"softmax\"\nshape = [64, 1000]\ndtype = \"fp32\"\nweight = 0.5000\n"));
  CHECK(config.find("linear_relu") == std::string::npos);
  CHECK_THAT(config, Catch::Contains("the builtin tuner runs them without an LLM"));
  const std::string spec = test::read_file((dir.path / "types/kb_gelu_tanh.toml").string());
  CHECK_THAT(spec, Catch::Contains("starter = \"kb_gelu_tanh.cu\""));
  auto loaded = load_user_type((dir.path / "types/kb_gelu_tanh.toml").string());
  REQUIRE(loaded.ok());
  CHECK_THAT(loaded->starter_source, Catch::Contains("kb_gelu_tanh_kernel("));
  check_compiles(loaded->starter_source, "kb_gelu_tanh");
  auto links = read_builtin_problems((dir.path / "kb.builtin.tsv").string());
  REQUIRE(links.ok());
  REQUIRE(links->size() == 1);
  CHECK((*links)[0].tag == "softmax");
  CHECK((*links)[0].problem == softmax);
  CHECK((*links)[0].spec == "types/kb_softmax.toml");
  CHECK(fs::exists(dir.path / "types/kb_softmax.toml"));   // its module is timed through it
  CHECK_THAT(test::read_file((dir.path / "kb.refused.tsv").string()), Catch::Contains("linear_relu.py\tneeds an LLM: "));
  auto check = test::run_autokernel("config check " + (dir.path / "kb.toml").string());
  INFO(check.out);
  CHECK(check.exit_code == 0);

  SECTION("without --offline or --starters: no first file, the LLM-needing problems stay in") {
    auto plain = test::run_autokernel("kernelbench " + kExamples + "gelu_tanh.py " + kExamples + "linear_relu.py --out " +
                                      (dir.path / "plain.toml").string() + " --types " + (dir.path / "plain").string());
    INFO(plain.out);
    REQUIRE(plain.exit_code == 0);
    CHECK_FALSE(fs::exists(dir.path / "plain/kb_gelu_tanh.cu"));
    CHECK_THAT(test::read_file((dir.path / "plain.toml").string()), Catch::Contains("kb_linear_relu"));
  }
  SECTION("--baselines needs the links its import wrote") {
    auto none = test::run_autokernel("kernelbench --baselines " + (dir.path / "absent.toml").string());
    CHECK(none.exit_code == 2);
    CHECK_THAT(none.out, Catch::Contains("absent.builtin.tsv: cannot read"));
  }
}
