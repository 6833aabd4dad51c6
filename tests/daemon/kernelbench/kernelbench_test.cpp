// The KernelBench importer: the embedded analyser on real problem files (it needs a Python 3 but
// no PyTorch), the spec and config it writes, the command's exit codes, and the example kernels
// under examples/kernelbench/kernels (and its kb6/) compiled by NVRTC.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <map>

#include "daemon/kernelbench/problem_analysis.hpp"
#include "daemon/kernelbench/problem_spec.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "kernels_cuda/user_type.hpp"
#include "tests/kernels_cuda/user_type_fields.hpp"
#include "tests/support.hpp"

using namespace ak;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kExamples = std::string(AK_SOURCE_DIR) + "/examples/kernelbench/";
const std::string kProblems = std::string(AK_SOURCE_DIR) + "/tests/data/kernelbench/";

/// False, with a message, where python3 has no torch: the analyser runs each problem with PyTorch.
bool torch_or_skip() {
  static const bool has = python_available("python3") && std::system("python3 -c 'import torch' >/dev/null 2>&1") == 0;
  if (!has) WARN("SKIPPED: python3 has no torch (pip install torch); the KernelBench analyser runs each problem with it");
  return has;
}

json analyse(const std::string& path) {
  auto a = analyse_problem("python3", path);
  INFO(path);
  REQUIRE(a.ok());
  return *a;
}

json analyse_text(const test::TempDir& dir, const std::string& name, const std::string& text) {
  return analyse(dir.write(name, text));
}

std::vector<json> shapes_of(const json& tensors) {
  std::vector<json> out;
  for (auto& t : tensors) out.push_back(t["shape"]);
  return out;
}

std::string spec_of(const json& a, const std::string& file) {
  const std::string name = kernelbench_type_name(file);
  return kernelbench_spec_text(a, name, name + ".py", file);
}

void check_lines(const std::string& spec, std::initializer_list<const char*> lines) {
  for (const char* line : lines) {
    INFO(line);
    CHECK(spec.find(line) != std::string::npos);
  }
}

/// A sum over axis `dim` where `dim` is an axis, or (as_size) a size of the input as well.
std::string sum_problem(bool dim_is_size) {
  return std::string(R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)

batch_size = 64
)") + (dim_is_size ? "dim = 16384\n\ndef get_inputs():\n    return [torch.rand(batch_size, dim)]\n"
                   : "features = 256\ndim = 1\n\ndef get_inputs():\n    return [torch.rand(batch_size, features)]\n") +
         "\ndef get_init_inputs():\n    return []\n";
}

}  // namespace

TEST_CASE("the analyser reads each example problem: dims, tensors, kind and output shape", "[kernelbench]") {
  if (!torch_or_skip()) return;
  SECTION("GELU-tanh is elementwise over [batch_size, dim]") {
    auto a = analyse(kExamples + "gelu_tanh.py");
    CHECK(a["accepted"] == true);
    CHECK(a["kind"] == "elementwise");
    CHECK(a["grid"] == "elements");
    CHECK(a["dims"] == json({"batch_size", "dim"}));
    CHECK(a["stages"]["bench"] == json({4096, 16384}));
    CHECK(shapes_of(a["inputs"]) == std::vector<json>{json({"batch_size", "dim"})});
    CHECK(a["parameters"].empty());
    CHECK(a["outputs"][0]["shape"] == json({"batch_size", "dim"}));
  }
  SECTION("the residual LayerNorm is row-wise, with two inputs, the norm's weight and bias, and a fixed scale") {
    auto a = analyse(kExamples + "residual_layernorm.py");
    CHECK(a["kind"] == "rowwise");
    CHECK(a["grid"] == "rows");
    CHECK(a["dims"] == json({"batch_size", "hidden"}));
    CHECK(a["fixed"] == json({{"scale", 0.5}}));
    REQUIRE(a["inputs"].size() == 2);
    CHECK(a["inputs"][0]["name"] == "x");
    CHECK(a["inputs"][1]["name"] == "residual");
    REQUIRE(a["parameters"].size() == 2);
    CHECK(a["parameters"][0]["name"] == "norm.weight");
    CHECK(a["parameters"][0]["shape"] == json({"hidden"}));
    CHECK(a["parameters"][1]["name"] == "norm.bias");
    CHECK(a["outputs"][0]["shape"] == json({"batch_size", "hidden"}));
  }
  SECTION("log-softmax over dim=1 of a 2-D input is row-wise") {
    auto a = analyse(kExamples + "log_softmax.py");
    CHECK(a["kind"] == "rowwise");
    CHECK(a["outputs"][0]["shape"] == json({"batch_size", "dim"}));
  }
  SECTION("the sum over the middle axis is a reduction whose output drops that axis; dim = 1 is fixed") {
    auto a = analyse(kExamples + "sum_middle_dim.py");
    CHECK(a["kind"] == "reduction");
    CHECK(a["grid"] == "elements");
    CHECK(a["reduce_axis"] == 1);
    CHECK(a["dims"] == json({"batch_size", "reduce_size", "features"}));
    CHECK(a["fixed"] == json({{"dim", 1}}));
    CHECK(a["outputs"][0]["shape"] == json({"batch_size", "features"}));
  }
  SECTION("Linear + ReLU is a GEMM with an epilogue: weight [out, in], bias [out], output [batch, out], flops 2MNK") {
    auto a = analyse(kExamples + "linear_relu.py");
    CHECK(a["kind"] == "gemm_epilogue");
    CHECK(a["grid"] == "tiles");
    REQUIRE(a["parameters"].size() == 2);
    CHECK(a["parameters"][0]["name"] == "linear.weight");
    CHECK(a["parameters"][0]["shape"] == json({"out_features", "in_features"}));
    CHECK(a["parameters"][1]["shape"] == json({"out_features"}));
    CHECK(a["outputs"][0]["shape"] == json({"batch_size", "out_features"}));
    CHECK(a["flops"] == "2 * batch_size * in_features * out_features");
  }
}

TEST_CASE("the analyser reads every kind by running it, and the spec holds its shapes as expressions", "[kernelbench]") {
  if (!torch_or_skip()) return;
  std::vector<std::string> files;
  for (const char* f : {"conv2d_relu", "conv_transpose2d", "max_pool2d", "group_norm", "softmax_middle", "cumsum", "argmax",
                        "cross_entropy", "bmm", "gemm_sum", "mlp", "batchnorm_training", "dropout_training"})
    files.push_back(kProblems + f + ".py");
  auto all = analyse_problems("python3", files);   // one Python for all of them
  REQUIRE(all.ok());
  REQUIRE(all->size() == files.size());
  std::map<std::string, json> a;
  for (size_t i = 0; i < files.size(); ++i) {
    INFO(files[i]);
    REQUIRE((*all)[i].ok());
    a[fs::path(files[i]).stem().string()] = *(*all)[i];
  }
  SECTION("a 2-D convolution: stride and padding fixed, its output size an expression of its input's") {
    const json& c = a["conv2d_relu"];
    CHECK(c["kind"] == "convolution");
    CHECK(c["dims"] == json({"batch_size", "in_channels", "out_channels", "height", "width"}));
    CHECK(c["fixed"] == json({{"kernel_size", 3}, {"stride", 2}, {"padding", 1}}));
    CHECK(c["parameters"][0]["shape"] == json({"out_channels", "in_channels", 3, 3}));
    CHECK(c["outputs"][0]["shape"] == json({"batch_size", "out_channels", "(height + 1) / 2", "(width + 1) / 2"}));
    check_lines(spec_of(c, "conv2d_relu.py"),
                {"kind = \"convolution\"\n", "[fixed]\nkernel_size = 3\npadding = 1\nstride = 2\n",
                 "name = \"out\"\nrole = \"output\"\nshape = [\"batch_size\", \"out_channels\", \"(height + 1) / 2\", \"(width + 1) / 2\"]\n"});
  }
  SECTION("a transposed convolution doubles the spatial sizes") {
    const json& c = a["conv_transpose2d"];
    CHECK(c["kind"] == "transposed_convolution");
    CHECK(c["outputs"][0]["shape"] == json({"batch_size", "out_channels", "2 * height", "2 * width"}));
    CHECK(c["parameters"][0]["shape"] == json({"in_channels", "out_channels", 3, 3}));
  }
  SECTION("pooling, GroupNorm (channels stay a multiple of the groups), a softmax over the middle axis") {
    CHECK(a["max_pool2d"]["kind"] == "pooling");
    CHECK(a["max_pool2d"]["outputs"][0]["shape"][2] == "(height + 1) / 2");
    const json& g = a["group_norm"];
    CHECK(g["kind"] == "normalization");
    CHECK(g["fixed"] == json({{"num_groups", 8}}));
    const auto dims = g["dims"].get<std::vector<std::string>>();
    const size_t channels = size_t(std::find(dims.begin(), dims.end(), "channels") - dims.begin());
    REQUIRE(channels < dims.size());
    const StageShapes s = kernelbench_stage_shapes(g);
    for (auto& shape : s.sweep) CHECK(shape[channels] % 8 == 0);
    for (auto& shape : s.edge) CHECK(shape[channels] % 8 == 0);
    CHECK(a["softmax_middle"]["kind"] == "normalization");
    CHECK(a["batchnorm_training"]["kind"] == "normalization");
  }
  SECTION("a scan, an index output in int64, a loss to a scalar with int64 labels in [0, num_classes)") {
    CHECK(a["cumsum"]["kind"] == "scan");
    const json& i = a["argmax"];
    CHECK(i["kind"] == "index");
    CHECK(i["outputs"][0] == json({{"name", "out"}, {"shape", {"batch_size", "features"}}, {"type", "int64"}}));
    check_lines(spec_of(i, "argmax.py"), {"role = \"output\"\nshape = [\"batch_size\", \"features\"]\ntype = \"int64\"\n"});
    const json& l = a["cross_entropy"];
    CHECK(l["kind"] == "loss");
    CHECK(l["outputs"][0]["shape"] == json::array());
    CHECK(l["inputs"][1]["type"] == "int64");
    CHECK(l["inputs"][1]["low"] == 0);
    CHECK(l["inputs"][1]["high"] == "num_classes");
    check_lines(spec_of(l, "cross_entropy.py"), {"role = \"output\"\nshape = []\ntype = \"float\"\n",
                                                 "type = \"int64\"\nlow = 0\nhigh = \"num_classes\"\n"});
  }
  SECTION("a batched matmul and a GEMM followed by a reduction are matmuls, timed in TFLOPS") {
    CHECK(a["bmm"]["kind"] == "matmul");
    CHECK(a["bmm"]["outputs"][0]["shape"] == json({"batch_size", "m", "n"}));
    check_lines(spec_of(a["bmm"], "bmm.py"), {"metric = \"TFLOPS\"\nflops = \"2 * batch_size * m * k * n\"\n"});
    CHECK(a["gemm_sum"]["kind"] == "matmul");
    CHECK(a["gemm_sum"]["outputs"][0]["shape"] == json({"batch_size", 1}));
  }
  SECTION("a small whole model") {
    CHECK(a["mlp"]["kind"] == "model");
    CHECK(a["mlp"]["parameters"].size() == 6);
    CHECK(a["mlp"]["parameters"][2]["name"] == "net.2.weight");
  }
  SECTION("dropout in training mode is refused: its output is random as KernelBench calls it") {
    CHECK(a["dropout_training"]["accepted"] == false);
    CHECK_THAT(a["dropout_training"]["refused"].get<std::string>(), Catch::Contains("forward draws random numbers (aten.bernoulli"));
  }
  SECTION("every stage shape's tensors stay under 2^22 elements") {
    for (auto& [name, analysis] : a) {
      if (!analysis["accepted"].get<bool>()) continue;
      INFO(name);
      const StageShapes s = kernelbench_stage_shapes(analysis);
      CHECK(s.bench.size() == analysis["dims"].size());
      CHECK_FALSE(s.sweep.empty());
      CHECK_FALSE(s.edge.empty());
    }
  }
}

TEST_CASE("the analyser refuses what cannot be judged, with the reason", "[kernelbench]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  auto broken = analyse_text(dir, "broken.py", "class Model(:\n");
  CHECK(broken["kind"] == "refused");
  CHECK(broken["refused"].get<std::string>().rfind("not valid Python", 0) == 0);
  auto no_model = analyse_text(dir, "plain.py", "x = 1\n");
  CHECK(no_model["refused"] == "no Model: not a problem in KernelBench's format");
  auto mask = analyse_text(dir, "mask.py", R"(import torch
class Model(torch.nn.Module):
    def forward(self, x, mask):
        return x * mask
n = 64
def get_inputs():
    return [torch.rand(n, n), torch.rand(n, n) > 0.5]
def get_init_inputs():
    return []
)");
  CHECK(mask["refused"] == "input mask is a bool tensor: a user type's tensors are float or int64");
  auto fails = analyse_text(dir, "fails.py", R"(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        raise ValueError("no")
n = 64
def get_inputs():
    return [torch.rand(n)]
def get_init_inputs():
    return []
)");
  CHECK_THAT(fails["refused"].get<std::string>(), Catch::Contains("ValueError: no"));
}

TEST_CASE("a global used as an axis is fixed, the same name used as a tensor's size is a dim", "[kernelbench]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  auto axis = analyse_text(dir, "axis.py", sum_problem(false));
  CHECK(axis["accepted"] == true);
  CHECK(axis["dims"] == json({"batch_size", "features"}));
  CHECK(axis["fixed"] == json({{"dim", 1}}));
  auto size = analyse_text(dir, "size.py", sum_problem(true));
  CHECK(size["accepted"] == true);
  CHECK(size["dims"] == json({"batch_size", "dim"}));
  CHECK(size["outputs"][0]["shape"] == json({"batch_size"}));
  CHECK(size["grid"] == "rows");
}

TEST_CASE("BatchNorm's parameters come before its buffers, num_batches_tracked an int64 scalar", "[kernelbench]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  auto a = analyse_text(dir, "bn.py", R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_features, out_features, scale_shape):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return self.bn(self.gemm(x) * self.scale)

batch_size = 128
in_features = 1024
out_features = 512
scale_shape = (out_features,)

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, scale_shape]
)");
  CHECK(a["kind"] == "matmul");   // a norm after the GEMM: not an elementwise epilogue
  std::vector<std::string> names;
  for (auto& p : a["parameters"]) names.push_back(p["name"]);
  // named_parameters: the module's own parameter first, then each submodule's in order.
  CHECK(names == std::vector<std::string>{"scale", "gemm.weight", "gemm.bias", "bn.weight", "bn.bias"});
  CHECK(a["parameters"][0]["shape"] == json({"out_features"}));   // scale_shape follows out_features
  REQUIRE(a["buffers"].size() == 3);
  CHECK(a["buffers"][2]["name"] == "bn.num_batches_tracked");
  CHECK(a["buffers"][2]["type"] == "int64");
  CHECK(a["buffers"][2]["shape"] == json::array());
  CHECK(a["derived"] == json({{"scale_shape", {"out_features"}}}));
  CHECK(kernelbench_spec_text(a, "kb_bn", "kb_bn.py", "bn.py")
            .find("# scale_shape is computed from out_features: the reference executes the module again at each shape\n") !=
        std::string::npos);
}

TEST_CASE("a type's name is the file's stem, sanitised", "[kernelbench]") {
  CHECK(kernelbench_type_name("level1/19_ReLU.py") == "kb_19_relu");
  CHECK(kernelbench_type_name("a/12_Gemm_Multiply_LeakyReLU.py") == "kb_12_gemm_multiply_leakyrelu");
  CHECK(kernelbench_type_name("x--Y .py") == "kb_x_y");
  CHECK(kernelbench_type_name(std::string(80, 'a') + ".py").size() == 48);
}

TEST_CASE("the spec written for a problem has its dims, shapes and tensors in the plan's format", "[kernelbench]") {
  if (!torch_or_skip()) return;
  auto a = analyse(kExamples + "residual_layernorm.py");
  const std::string spec = kernelbench_spec_text(a, "kb_residual_layernorm", "kb_residual_layernorm.py",
                                                 kExamples + "residual_layernorm.py");
  for (const char* line : {"name = \"kb_residual_layernorm\"\n", "reference = \"kb_residual_layernorm.py\"\n",
                           "kind = \"rowwise\"\n", "grid = \"rows\"\n", "dtypes = [\"fp32\"]\n", "metric = \"GBps\"\n",
                           "dims = [\"batch_size\", \"hidden\"]\n", "bench = [8192, 4096]\n", "smoke = [4, 1000]\n",
                           "edge = [[1, 1], [1, 4096], [3, 7]]\n", "[fixed]\nscale = 0.5\n",
                           "[[tensor]]\nname = \"norm_weight\"\nrole = \"parameter\"\nshape = [\"hidden\"]\ntype = \"float\"\n",
                           "[[tensor]]\nname = \"out\"\nrole = \"output\"\nshape = [\"batch_size\", \"hidden\"]\n"}) {
    INFO(line);
    CHECK(spec.find(line) != std::string::npos);
  }
  // Inputs, then parameters, then outputs.
  CHECK(spec.find("name = \"residual\"") < spec.find("name = \"norm_weight\""));
  CHECK(spec.find("name = \"norm_bias\"") < spec.find("name = \"out\""));
}

TEST_CASE("tensor names in the spec are distinct C identifiers", "[kernelbench]") {
  json a = {{"kind", "elementwise"}, {"grid", "elements"}, {"dims", {"n"}},
            {"stages", {{"bench", {64}}, {"smoke", {4}}, {"sweep", {{8}}}, {"stability", {8}}, {"determinism", {8}},
                        {"edge", {{1}}}}},
            {"inputs", {{{"name", "out"}, {"shape", {"n"}}}, {{"name", "float"}, {"shape", {"n"}}},
                        {{"name", "n"}, {"shape", {"n"}}}}},
            {"outputs", {{{"name", "out"}, {"shape", {"n"}}}}}};
  const std::string spec = kernelbench_spec_text(a, "kb_t", "kb_t.py", "t.py");
  for (const char* name : {"name = \"out\"\nrole = \"input\"", "name = \"float_1\"", "name = \"n_1\"",
                           "name = \"out_1\"\nrole = \"output\""}) {
    INFO(name);
    CHECK(spec.find(name) != std::string::npos);
  }
}

TEST_CASE("the spec written for an analysis reads back as the user type built from it, with its notes as comments",
          "[kernelbench][user_type]") {
  const json a = {{"kind", "convolution"}, {"grid", "tiles"}, {"dims", {"batch_size", "channels", "height"}},
                  {"stages", {{"bench", {8, 16, 64}}, {"smoke", {2, 8, 16}}, {"sweep", {{4, 8, 33}, {1, 16, 65}}},
                              {"stability", {4, 8, 33}}, {"determinism", {1, 16, 65}}, {"edge", {{1, 8, 5}}}}},
                  {"fixed", {{"kernel_size", 3}, {"stride", 2}, {"scale", 0.5}}},
                  {"derived", {{"scale_shape", {"channels"}}}},
                  {"constant_inputs", {{"eps", 1e-5}}},
                  {"memory", {{"pool_bytes", 1e9}, {"reference_bytes", 2e9}}},
                  {"flops", "2 * batch_size * channels * channels * height * 3"},
                  {"inputs", {{{"name", "x"}, {"shape", {"batch_size", "channels", "height"}}},
                              {{"name", "labels"}, {"shape", {"batch_size"}}, {"type", "int64"}, {"low", 0}, {"high", "channels"}}}},
                  {"parameters", {{{"name", "conv.weight"}, {"shape", {"channels", "channels", 3}}}}},
                  {"outputs", {{{"name", "out"}, {"shape", {"batch_size", "channels", "(height - kernel_size) / stride + 1"}}}}}};
  const KernelbenchUserType type = kernelbench_user_type(a, "kb_conv", "kb_conv.py", "dir/conv.py", "kb_conv.cu");
  const std::string text = kernelbench_spec_text(a, "kb_conv", "kb_conv.py", "dir/conv.py", "kb_conv.cu");
  CHECK(text == user_type_toml(type.spec, type.comments));
  auto back = parse_user_type(text, "types/kb_conv.toml");
  INFO(text);
  INFO((back ? "" : back.error().message));
  REQUIRE(back.ok());
  test::check_same_user_type(type.spec, *back);
  CHECK(back->summary == "KernelBench problem conv.py");
  CHECK(back->metric == Metric::TFLOPS);
  CHECK(back->tensors[1].int64);
  CHECK(test::bound_text(back->tensors[1].high) == "[dim channels]");
  CHECK(back->tensors[2].name == "conv_weight");
  CHECK(test::size_terms_text(back->tensors[3].shape) == "[dim batch_size, dim channels, expr (height - kernel_size) / stride + 1]");
  check_lines(text, {"# Written by `autokernel kernelbench` from the problem file below; edit freely.\n",
                     "grid = \"tiles\"   # for a file without ak_launch (one kernel); a file with it launches its own steps\n",
                     "starter = \"kb_conv.cu\"   # written from the forward's elementwise ops; judged like any file\n",
                     "bench = [8, 16, 64]\n# at bench in fp32: the pool 1 GB, the reference process ~2 GB (estimated)\nsmoke = ",
                     "[fixed]\nkernel_size = 3\nscale = 0.5\nstride = 2\n# scale_shape is computed from channels: ",
                     "# get_inputs() also passes eps = 1e-05 to forward"});
}

TEST_CASE("stage shapes stay small, include sizes that are multiples of nothing and 1 for batch sizes", "[kernelbench]") {
  if (!torch_or_skip()) return;
  for (const char* file : {"gelu_tanh.py", "residual_layernorm.py", "log_softmax.py", "sum_middle_dim.py", "linear_relu.py"}) {
    INFO(file);
    auto a = analyse(kExamples + file);
    const StageShapes s = kernelbench_stage_shapes(a);
    const auto dims = a["dims"].get<std::vector<std::string>>();
    CHECK(s.bench.size() == dims.size());
    int64_t largest_input = 0;
    for (auto& v : s.sweep) {
      int64_t n = 1;
      for (auto& e : a["inputs"][0]["shape"]) n *= v[size_t(std::find(dims.begin(), dims.end(), e) - dims.begin())];
      largest_input = std::max(largest_input, n);
      CHECK(n <= (int64_t(1) << 22));
    }
    CHECK(largest_input > 1000);
    bool odd = false;
    for (auto& v : s.sweep) odd = odd || std::all_of(v.begin(), v.end(), [](int64_t x) { return x % 2 == 1; });
    CHECK(odd);
    CHECK(s.edge.front() == DimValues(dims.size(), 1));
    CHECK(s.stability == s.sweep.front());
  }
}

const char* kDropoutProblem = "dropout_training.py";

TEST_CASE("autokernel kernelbench writes specs, copies the problems and writes the config and its refusals", "[kernelbench]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  const std::string dropout = kProblems + kDropoutProblem;
  std::string five;  // examples/kernelbench/ holds launch-plan problems too, which kernelbench_kinds_test reads
  for (const char* p : {"gelu_tanh", "residual_layernorm", "log_softmax", "sum_middle_dim", "linear_relu"})
    five += kExamples + p + ".py ";
  auto r = test::run_autokernel("kernelbench " + five + dropout + " " + (dir.path / "absent.py").string() +
                                " --out " + (dir.path / "kb.toml").string());
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("gelu_tanh.py: accepted (elementwise) as kb_gelu_tanh") != std::string::npos);
  CHECK(r.out.find("linear_relu.py: accepted (gemm_epilogue) as kb_linear_relu") != std::string::npos);
  CHECK(r.out.find("dropout_training.py: refused: forward draws random numbers") != std::string::npos);
  CHECK(r.out.find("absent.py: refused: no such file") != std::string::npos);
  CHECK(r.out.find("5 accepted, 2 refused") != std::string::npos);
  const std::string refused = test::read_file((dir.path / "kb.refused.tsv").string());
  CHECK(refused.rfind("file\treason\n" + dropout + "\tforward draws random numbers (aten.bernoulli_", 0) == 0);
  CHECK_THAT(refused, Catch::Contains((dir.path / "absent.py").string() + "\tno such file\n"));
  for (const char* name : {"kb_gelu_tanh", "kb_residual_layernorm", "kb_log_softmax", "kb_sum_middle_dim", "kb_linear_relu"}) {
    INFO(name);
    CHECK(fs::exists(dir.path / "types" / (std::string(name) + ".toml")));
    CHECK(fs::exists(dir.path / "types" / (std::string(name) + ".py")));
  }
  CHECK(test::read_file((dir.path / "types/kb_gelu_tanh.py").string()) == test::read_file(kExamples + "gelu_tanh.py"));
  const std::string config = test::read_file((dir.path / "kb.toml").string());
  CHECK(config.find("[run]\nname = \"kb\"\n") != std::string::npos);
  CHECK(config.find("[llm]\n#") != std::string::npos);
  CHECK(config.find("[[kernel]]\nspec = \"types/kb_sum_middle_dim.toml\"\ndtype = \"fp32\"\nweight = 0.2000\n") !=
        std::string::npos);
  CHECK(config.find("dropout") == std::string::npos);

  SECTION("--types puts the specs elsewhere, named relative to the config") {
    auto t = test::run_autokernel("kernelbench " + kExamples + "gelu_tanh.py --out " + (dir.path / "c/one.toml").string() +
                                  " --types " + (dir.path / "specs").string());
    CHECK(t.exit_code == 0);
    CHECK(fs::exists(dir.path / "specs/kb_gelu_tanh.toml"));
    CHECK(test::read_file((dir.path / "c/one.toml").string()).find("spec = \"../specs/kb_gelu_tanh.toml\"") != std::string::npos);
  }
}

TEST_CASE("autokernel kernelbench overwrites neither a config nor an edited spec without --force", "[kernelbench]") {
  if (!torch_or_skip()) return;
  test::TempDir dir;
  const std::string config = dir.write("kb.toml", "# the user's own config\n");
  auto refused = test::run_autokernel("kernelbench " + kExamples + "gelu_tanh.py --out " + config);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.out, Catch::Contains("kb.toml exists: give --force to overwrite it"));
  CHECK(test::read_file(config) == "# the user's own config\n");
  CHECK_FALSE(fs::exists(dir.path / "types"));
  auto forced = test::run_autokernel("kernelbench " + kExamples + "gelu_tanh.py --out " + config + " --force");
  CHECK(forced.exit_code == 0);
  CHECK_THAT(test::read_file(config), Catch::Contains("spec = \"types/kb_gelu_tanh.toml\""));
  // The same specs again, into a new config: nothing is overwritten, so no --force is needed.
  const std::string again = (dir.path / "again.toml").string();
  CHECK(test::run_autokernel("kernelbench " + kExamples + "gelu_tanh.py --out " + again).exit_code == 0);
  // An edited spec is kept unless --force, and nothing else is written either.
  const std::string spec = (dir.path / "types/kb_gelu_tanh.toml").string();
  const std::string edited = test::read_file(spec) + "# edited\n";
  std::ofstream(spec) << edited;
  const std::string third = (dir.path / "third.toml").string();
  auto kept = test::run_autokernel("kernelbench " + kExamples + "gelu_tanh.py --out " + third);
  CHECK(kept.exit_code == 2);
  CHECK_THAT(kept.out, Catch::Contains("would be overwritten (an edit?), first " + spec));
  CHECK(test::read_file(spec) == edited);
  CHECK_FALSE(fs::exists(third));
  CHECK(test::run_autokernel("kernelbench " + kExamples + "gelu_tanh.py --out " + third + " --force").exit_code == 0);
  CHECK(test::read_file(spec) != edited);
  CHECK(test::run_autokernel("kernelbench " + kExamples + "gelu_tanh.py --out " + dir.path.string()).exit_code == 2);
}

TEST_CASE("autokernel kernelbench exits 2 when nothing is accepted, on bad usage and without python", "[kernelbench]") {
  test::TempDir dir;
  const std::string conv = kProblems + kDropoutProblem;
  if (torch_or_skip()) {
    auto none = test::run_autokernel("kernelbench " + conv + " --out " + (dir.path / "kb.toml").string());
    CHECK(none.exit_code == 2);
    CHECK(none.out.find("no problem accepted (1 refused)") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path / "kb.toml"));
    auto missing = test::run_autokernel("kernelbench " + (dir.path / "absent.py").string() + " --out " + (dir.path / "kb.toml").string());
    CHECK(missing.exit_code == 2);
    CHECK(missing.out.find("absent.py: refused: no such file") != std::string::npos);
  }
  auto no_out = test::run_autokernel("kernelbench " + conv);
  CHECK(no_out.exit_code == 2);
  CHECK(no_out.out.find("give --out CONFIG") != std::string::npos);
  auto no_files = test::run_autokernel("kernelbench --out x.toml");
  CHECK(no_files.exit_code == 2);
  auto no_python = test::run_autokernel("kernelbench " + conv + " --out " + (dir.path / "kb.toml").string() +
                                        " --python " + (dir.path / "no-python3").string());
  CHECK(no_python.exit_code == 2);
  CHECK(no_python.out.find("the analysis of a problem needs a Python 3 with PyTorch") != std::string::npos);
}

TEST_CASE("the example kernels compile with NVRTC in the user-type contract", "[kernelbench][nvrtc]") {
  // kernels/kb6: honest files for six KernelBench problems (tests/gpu/gpu-kernelbench.sh kb6).
  std::vector<fs::directory_entry> files;
  for (const char* folder : {"kernels", "kernels/kb6"})
    for (auto& entry : fs::directory_iterator(kExamples + folder)) files.push_back(entry);
  const auto kb6 = std::count_if(files.begin(), files.end(), [](const fs::directory_entry& e) {
    return e.path().parent_path().filename() == "kb6" && e.path().extension() == ".cu";
  });
  CHECK(kb6 == 6);
  for (auto& entry : files) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".cu") continue;
    // A file with a launch plan has steps, not kb_<name>_kernel: kernelbench_kinds_test.cpp compiles those.
    if (test::read_file(entry.path().string()).find("ak_launch[]") != std::string::npos) continue;
    const std::string type = "kb_" + file.substr(0, file.find('.'));
    // The honest kernels take every dtype; the wrong and cheating ones fp32 (and fp16 where they can).
    std::vector<std::string> dtypes{"float"};
    if (file.find(".wrong") == std::string::npos && file.find(".cheating") == std::string::npos)
      dtypes = {"float", "__half", "__nv_bfloat16"};
    CompileRequest req{test::read_file(entry.path().string()), file, {}, "sm_90a"};
    for (auto& d : dtypes) req.name_expressions.push_back(type + "_kernel<" + d + ">");
    INFO(file);
    auto out = nvrtc_compile(req);
    REQUIRE(out.ok());
    INFO(out->log);
    CHECK(out->ok);
    CHECK(out->functions.size() == dtypes.size());
    CHECK(req.source.find("extern \"C\" __constant__ int ak_block_threads") != std::string::npos);
  }
}
