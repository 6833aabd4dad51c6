#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"
#include "tests/support.hpp"

using namespace ak;
using Catch::Contains;

namespace {

UserTypeSpec parsed(const std::string& text, const std::string& reference = test::kGeluReference) {
  auto s = parse_user_type(text, "types/t.toml");
  INFO((s ? "" : s.error().message));
  REQUIRE(s.ok());
  REQUIRE(with_sources(*s, reference, "").ok());
  return *s;
}

/// The GELU spec with `from` replaced by `to` (the first occurrence).
std::string gelu_with(const std::string& from, const std::string& to) {
  std::string t = test::kGeluSpec;
  const size_t at = t.find(from);
  REQUIRE(at != std::string::npos);
  return t.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  auto s = parse_user_type(text, "types/t.toml");
  REQUIRE_FALSE(s.ok());
  return s.error().message;
}

const std::string kNoBench = "bench = [4096, 393216]\n";

}  // namespace

TEST_CASE("a user type's spec is read with its defaults", "[user_type]") {
  UserTypeSpec g = parsed(test::kGeluSpec);
  CHECK(g.name == "gelu_tanh");
  CHECK(g.kind == "elementwise");
  CHECK(g.grid == GridRule::Elements);
  CHECK(g.dtypes == std::vector<DType>{DType::F32, DType::F16});
  CHECK(g.metric == Metric::GBps);
  CHECK(g.bytes == "tensors");
  CHECK(g.flops == "0");
  CHECK(g.stability == Shape{64, 4096});     // sweep[0]
  CHECK(g.determinism == Shape{64, 4096});
  REQUIRE(g.tensors.size() == 2);
  CHECK(g.tensors[1].role == TensorRole::Output);

  UserTypeSpec l = parsed(test::kLogSoftmaxSpec, test::kLogSoftmaxReference);
  CHECK(l.dtypes == std::vector<DType>{DType::F32});
  CHECK(l.bench == Shape{256, 16384});       // the module's own globals
  CHECK(l.stability == Shape{16, 2048});
  CHECK(l.tolerance_for(DType::F32).atol == 1e-5);
  CHECK(l.tolerance_for(DType::F16).atol == 1e-2);
  REQUIRE(l.fixed.size() == 1);
  CHECK(l.fixed[0] == std::pair<std::string, std::string>{"reduce_dim", "1"});

  UserTypeSpec m = parsed(test::kMatmulSpec);
  CHECK(m.metric == Metric::TFLOPS);         // gemm_epilogue's default
}

TEST_CASE("a spec without bench whose reference lacks a dim's global is refused", "[user_type]") {
  auto s = parse_user_type(gelu_with(kNoBench, ""), "types/t.toml");
  REQUIRE(s.ok());
  auto st = with_sources(*s, "import torch\nbatch_size = 7\n", "");
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message, Contains("types/t.toml: bench is missing") && Contains("`dim = <positive integer>`"));
}

TEST_CASE("every broken rule of a spec is an error naming the file, the line and the key", "[user_type]") {
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases{
      {gelu_with("name = \"gelu_tanh\"", "name = \"Gelu\""), "types/t.toml:1: name = \"Gelu\": expected [a-z][a-z0-9_]{0,47}"},
      {gelu_with("name = \"gelu_tanh\"", "name = \"softmax\""), "name = \"softmax\" is a built-in kernel type"},
      {gelu_with("name = \"gelu_tanh\"\n", ""), "name is missing"},
      {gelu_with("reference = \"gelu_tanh.py\"\n", ""), "reference is missing"},
      {gelu_with("kind = \"elementwise\"", "kind = \"pointwise\""), "types/t.toml:4: kind = \"pointwise\": expected one of \"elementwise\""},
      {gelu_with("grid = \"elements\"", "grid = \"blocks\""), "grid = \"blocks\": expected one of \"elements\" | \"rows\" | \"tiles\""},
      {gelu_with("dtypes = [\"fp32\", \"fp16\"]", "dtypes = [\"fp32\", \"fp64\"]"), "dtypes has \"fp64\""},
      {gelu_with("dtypes = [\"fp32\", \"fp16\"]", "dtypes = [\"fp32\", \"fp32\"]"), "dtypes has \"fp32\": expected a non-empty array of distinct"},
      {gelu_with("dtypes = [\"fp32\", \"fp16\"]", "metric = \"GFLOPS\""), "metric = \"GFLOPS\": expected one of \"GBps\" | \"TFLOPS\""},
      {gelu_with("bench = [4096, 393216]", "bench = [4096]"), "types/t.toml:8: bench has 1 values: expected an array of 2 positive integers"},
      {gelu_with("smoke = [4, 1000]", "smoke = [4, 0]"), "smoke has 0: expected an array of 2 positive integers"},
      {gelu_with("smoke = [4, 1000]\n", ""), "smoke is missing"},
      {gelu_with("sweep = [[64, 4096], [33, 1531]]", "sweep = [64, 4096]"), "sweep is an array of scalars: expected an array of shapes"},
      {gelu_with("edge = [[1, 1], [3, 7]]", "edge = [[1, 1], [3]]"), "edge[1] has 1 values"},
      {gelu_with("dims = [\"batch_size\", \"dim\"]", "dims = [\"batch_size\", \"batch_size\"]"), "dims names \"batch_size\" twice"},
      {gelu_with("dims = [\"batch_size\", \"dim\"]", "dims = [\"batch_size\", \"int\"]"), "dims has \"int\": expected names"},
      {gelu_with("dims = [\"batch_size\", \"dim\"]", "dims = [\"batch_size\", \"dim\", \"extra\"]"), "bench has 2 values: expected an array of 3"},
      {gelu_with("shape = [\"batch_size\", \"dim\"]", "shape = [\"batch_size\", \"cols\"]"),
       "tensor[0].shape names \"cols\", which is not a dim: expected one of batch_size, dim or an integer"},
      {gelu_with("shape = [\"batch_size\", \"dim\"]", "shape = [\"batch_size\", -3]"), "tensor[0].shape has -3"},
      {gelu_with("shape = [\"batch_size\", \"dim\"]\ntype = \"float\"\n\n[[tensor]]\nname = \"out\"",
                 "shape = [\"batch_size\", 8]\ntype = \"float\"\n\n[[tensor]]\nname = \"out\""),
       ""},  // dim still used by the output: accepted
      {gelu_with("role = \"output\"\nshape = [\"batch_size\", \"dim\"]", "role = \"output\"\nshape = [\"batch_size\", 4]"), ""},
      {gelu_with("role = \"output\"", "role = \"input\""), "no [[tensor]] has role = \"output\""},
      {std::string(test::kGeluSpec) + "\n[[tensor]]\nname = \"late\"\nrole = \"input\"\nshape = [\"dim\"]\ntype = \"float\"\n",
       "roles are out of order: expected inputs, then parameters, then buffers, then outputs"},
      {gelu_with("role = \"input\"", "role = \"weight\""), "tensor[0].role = \"weight\": expected one of"},
      {gelu_with("type = \"float\"", "type = \"double\""), "tensor[0].type = \"double\""},
      {gelu_with("type = \"float\"", "type = \"int64\""), "tensor[0] (\"x\") is an int64 input without low"},
      {gelu_with("role = \"output\"\nshape = [\"batch_size\", \"dim\"]\ntype = \"float\"",
                 "role = \"output\"\nshape = [\"batch_size\", \"dim\"]\ntype = \"float\"\nlow = 0"),
       "tensor[1].low is set on a tensor that is not an input"},
      {gelu_with("type = \"float\"", "type = \"float\"\nlow = \"dim\""), "tensor[0].low is a string: expected a finite number"},
      {gelu_with("type = \"float\"", "type = \"float\"\nlow = 1.0\nhigh = 1"), "declares low = 1 and high = 1: expected low < high"},
      {gelu_with("type = \"float\"", "type = \"float\"\nlow = -1\nhigh = 0.5"), ""},
      {gelu_with("type = \"float\"", "type = \"int64\"\nlow = 5\nhigh = 2"), "low (5 = 5) is not below high (2 = 2)"},
      {gelu_with("name = \"out\"", "name = \"x\""), "tensor \"x\" is named twice"},
      {gelu_with("name = \"out\"", "name = \"dim\""), "tensor \"dim\" is named twice (or like a dim)"},
      {gelu_with("name = \"out\"", "name = \"ak_out\""), "tensor[1].name = \"ak_out\": expected a C identifier"},
      {gelu_with("summary", "sumary"), "unknown key 'sumary' in the spec"},
      {gelu_with("type = \"float\"", "type = \"float\"\nstride = 2"), "unknown key 'stride' in [[tensor]]"},
      {gelu_with("grid = \"elements\"", "grid = \"elements\"\nbytes = \"2 * batch_size * dim * elem + rows\""),
       "bytes = \"2 * batch_size * dim * elem + rows\" reads 'rows': expected only the dims and elem"},
      {gelu_with("grid = \"elements\"", "grid = \"elements\"\nflops = \"8 * batch_size * dim * elem\""), "flops = \"8 * batch_size * dim * elem\" reads 'elem'"},
      {gelu_with("grid = \"elements\"", "grid = \"elements\"\nflops = \"8 * (batch_size\""), "at character 16 of \"8 * (batch_size\": found the end, expected ')'"},
      {gelu_with("grid = \"elements\"", "grid = \"elements\"\n[tolerance]\nfp32 = 2"), "tolerance.fp32 is not a number in (0, 1)"},
      {gelu_with("grid = \"elements\"", "grid = \"elements\"\n[tolerance]\nfp64 = 0.1"), "unknown key 'fp64' in [tolerance]"},
      {"name = \"x\"\nname = \"y\"\n", "types/t.toml:2: not valid TOML"},
  };
  for (auto& c : cases) {
    INFO(c.text);
    auto s = parse_user_type(c.text, "types/t.toml");
    if (c.expected.empty()) {
      INFO((s ? "" : s.error().message));
      CHECK(s.ok());
    } else {
      REQUIRE_FALSE(s.ok());
      CHECK_THAT(s.error().message, Contains(c.expected));
    }
  }
}

TEST_CASE("a dim that sizes no tensor is refused", "[user_type]") {
  std::string t = gelu_with("dims = [\"batch_size\", \"dim\"]", "dims = [\"batch_size\", \"dim\", \"spare\"]");
  for (auto [from, to] : {std::pair{"bench = [4096, 393216]", "bench = [4096, 393216, 2]"}, {"smoke = [4, 1000]", "smoke = [4, 1000, 2]"},
                          {"sweep = [[64, 4096], [33, 1531]]", "sweep = [[64, 4096, 2]]"}, {"edge = [[1, 1], [3, 7]]", "edge = [[1, 1, 1]]"}})
    t.replace(t.find(from), std::string(from).size(), to);
  CHECK_THAT(error_of(t), Contains("dim \"spare\" appears in no tensor's shape"));
}

TEST_CASE("a grid rule without the tensor it counts is refused", "[user_type]") {
  CHECK_THAT(error_of(gelu_with("role = \"input\"\nshape = [\"batch_size\", \"dim\"]\ntype = \"float\"",
                                "role = \"output\"\nshape = [\"batch_size\", \"dim\"]\ntype = \"float\"")
                          .replace(std::string(test::kGeluSpec).find("grid = \"elements\""), 17, "grid = \"rows\"    ")),
             Contains("grid = \"rows\" counts the rows of the first input"));
}

TEST_CASE("the KernelSpec of a user type follows the contract", "[user_type]") {
  const KernelSpec g = user_kernel_spec(parsed(test::kGeluSpec));
  CHECK(g.type == "gelu_tanh");
  CHECK(g.entry == "gelu_tanh_kernel");
  CHECK(g.abi() == "template <typename T> __global__ void gelu_tanh_kernel(const T* __restrict__ x, T* __restrict__ out, int batch_size, int dim)");
  CHECK(g.shape_names == std::vector<std::string>{"batch_size", "dim"});
  CHECK(g.bench_shape == Shape{4096, 393216});
  CHECK(g.smoke_shape == Shape{4, 1000});
  CHECK(g.sweep_shapes.size() == 2);
  CHECK(g.edge_shapes.size() == 2);
  CHECK(g.reference_source.empty());
  CHECK_FALSE(g.cpu_reference);
  CHECK(g.args[0].numel(Shape{33, 1531}) == 33 * 1531);
  CHECK(g.args[3].int_value(Shape{33, 1531}) == 1531);
  CHECK(g.bytes(Shape{10, 100}, DType::F16) == 2.0 * 1000 * 2);
  CHECK(g.bytes(Shape{10, 100}, DType::F32) == 2.0 * 1000 * 4);
  CHECK(g.flops(Shape{10, 100}) == 0);
  CHECK(g.tolerance(DType::F32).atol == 1e-4);
  // elements: ceil(numel / (threads * items))
  auto elements = [](int threads, int items) {
    LaunchGeometry g{threads};
    g.items_per_thread = items;
    return g;
  };
  CHECK(g.grid(Shape{10, 100}, elements(256, 1)) == 4);
  CHECK(g.grid(Shape{10, 100}, elements(256, 4)) == 1);
  CHECK(g.grid(Shape{10, 100}, elements(128, 2)) == 4);
  CHECK_THAT(g.launch_help, Contains("ak_items_per_thread"));

  const KernelSpec l = user_kernel_spec(parsed(test::kLogSoftmaxSpec, test::kLogSoftmaxReference));
  CHECK(l.tolerance(DType::F32).atol == 1e-5);
  // rows: ceil(rows of the first input / ak_rows_per_block)
  LaunchGeometry rows{256, 4};
  CHECK(l.grid(Shape{7, 65537}, rows) == 2);
  CHECK(l.grid(Shape{64, 4096}, rows) == 16);
  CHECK(l.rows(Shape{7, 65537}) == 7);
  CHECK(l.cols(Shape{7, 65537}) == 65537);
  CHECK_THAT(l.launch_help, Contains("ak_rows_per_block"));

  const KernelSpec m = user_kernel_spec(parsed(test::kMatmulSpec));
  CHECK(m.abi() == "template <typename T> __global__ void matmul_bias_relu_kernel(const T* __restrict__ x, const T* __restrict__ weight, "
                   "const T* __restrict__ bias, T* __restrict__ out, int batch_size, int in_features, int out_features)");
  const Shape s{33, 100, 70};
  CHECK(m.args[1].numel(s) == 70 * 100);
  CHECK(m.args[2].numel(s) == 70);
  CHECK(m.args[3].numel(s) == 33 * 70);
  CHECK(m.args[1].fill == Fill::PlainData);
  CHECK(m.args[0].fill == Fill::Data);
  // tiles: the output as [33, 70]: ceil(33 / 16) * ceil(70 / 32)
  LaunchGeometry tiles{128, 1, 16, 32};
  CHECK(m.grid(s, tiles) == 3 * 3);
  CHECK(m.grid(s, LaunchGeometry{128}) == 0);   // no tile sizes: no blocks, the launch refuses it
  CHECK(m.flops(s) == 2.0 * 33 * 100 * 70);
  CHECK(m.bytes(s, DType::F32) == 4.0 * (33 * 100 + 70 * 100 + 70 + 33 * 70));
  CHECK(m.metric == Metric::TFLOPS);
}

TEST_CASE("an int64 input becomes a long long argument drawn between its low and high bounds", "[user_type]") {
  std::string t = gelu_with("type = \"float\"", "type = \"int64\"\nlow = 0\nhigh = \"dim\"");
  t = t.replace(t.find("grid = \"elements\""), 17, "grid = \"elements\"\nbytes = \"batch_size * dim * (8 + elem)\"");
  const KernelSpec k = user_kernel_spec(parsed(t));
  CHECK(k.args[0].elem == Elem::I64);
  CHECK(k.args[0].fill == Fill::IntRange);
  CHECK(k.args[0].int_range(Shape{3, 7}) == std::pair<int64_t, int64_t>{0, 7});
  CHECK_THAT(k.abi(), Contains("const long long* __restrict__ x"));
  CHECK(k.bytes(Shape{2, 5}, DType::F16) == 10.0 * 10);
}

TEST_CASE("a float input may declare the range its values lie in, which the edge stage keeps to", "[user_type]") {
  const UserTypeSpec s = parsed(gelu_with("type = \"float\"", "type = \"float\"\nlow = 0\nhigh = 1.5"));
  REQUIRE(s.tensors[0].least.has_value());
  CHECK(*s.tensors[0].least == 0.0);
  CHECK(*s.tensors[0].most == 1.5);
  CHECK_FALSE(s.tensors[0].low.has_value());
  CHECK_FALSE(s.tensors[1].least.has_value());
  const KernelSpec k = user_kernel_spec(s);
  CHECK(k.args[0].elem != Elem::I64);   // still the dtype under test
}

TEST_CASE("a user type travels as its texts and parses again the same", "[user_type]") {
  test::TempDir dir;
  dir.write("gelu_tanh.py", test::kGeluReference);
  dir.write("gelu_tanh.cu", "// a starter\n");
  const std::string path = dir.write("gelu.toml", gelu_with("dims =", "starter = \"gelu_tanh.cu\"\ndims ="));
  auto loaded = load_user_type(path);
  INFO((loaded ? "" : loaded.error().message));
  REQUIRE(loaded.ok());
  CHECK(loaded->reference_source == test::kGeluReference);
  CHECK(loaded->starter_source == "// a starter\n");
  const nlohmann::json j = nlohmann::json::parse(loaded->to_json().dump());
  dir.write("gelu_tanh.py", "changed on disk\n");   // the copy reads no file
  auto back = UserTypeSpec::from_json(j);
  REQUIRE(back.ok());
  CHECK(back->text == loaded->text);
  CHECK(back->reference_source == test::kGeluReference);
  CHECK(back->starter_source == "// a starter\n");
  CHECK(user_kernel_spec(*back).abi() == user_kernel_spec(*loaded).abi());
  CHECK_FALSE(UserTypeSpec::from_json(nlohmann::json{{"path", "x"}}).ok());
}

TEST_CASE("loading a user type names the file it could not read", "[user_type]") {
  test::TempDir dir;
  const std::string path = dir.write("gelu.toml", test::kGeluSpec);
  auto s = load_user_type(path);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Contains(path + ": reference = \"gelu_tanh.py\": cannot read"));
  CHECK_THAT(load_user_type(dir.path.string() + "/none.toml").error().message, Contains("cannot read the user type's spec"));
}

TEST_CASE("a registered user type is found by name and version, and a clash is refused", "[user_type]") {
  UserTypeSpec s = parsed(gelu_with("gelu_tanh\"", "gelu_registry_test\""));
  REQUIRE(register_user_type(s).ok());
  REQUIRE(register_user_type(s).ok());   // the same spec again: a config read twice
  const KernelSpec* k = find_spec("gelu_registry_test");
  REQUIRE(k != nullptr);
  CHECK(k->entry == "gelu_registry_test_kernel");
  CHECK(find_spec("gelu_registry_test", 1) == k);
  CHECK(find_spec("gelu_registry_test", 2) == nullptr);
  CHECK(find_user_type("gelu_registry_test")->reference_source == s.reference_source);
  CHECK(find_user_type("softmax") == nullptr);
  auto file = spec_for_file("gelu_registry_test", "// any file\n");
  REQUIRE(file.ok());
  CHECK(*file == k);
  for (const KernelSpec* b : all_specs()) CHECK(b->type != "gelu_registry_test");

  UserTypeSpec other = s;
  other.text += "\n# changed\n";
  auto clash = register_user_type(other);
  REQUIRE_FALSE(clash.ok());
  CHECK_THAT(clash.error().message, Contains("user type \"gelu_registry_test\" is already defined by types/t.toml"));
  UserTypeSpec builtin = s;
  builtin.name = "rmsnorm";
  CHECK_THAT(register_user_type(builtin).error().message, Contains("is a built-in kernel type"));
}

namespace {

/// A pooling-like spec: the output's sizes are expressions over the dims and integer [fixed] globals.
const std::string kPoolSpec = R"(name = "pool_rows"
reference = "pool.py"
kind = "pooling"
grid = "elements"
dims = ["batch_size", "length"]
bench = [16, 4096]
smoke = [2, 9]
sweep = [[4, 100], [3, 31]]
edge = [[1, 3]]

[fixed]
kernel_size = 3
stride = 2
scale = 0.5

[[tensor]]
name = "x"
role = "input"
shape = ["batch_size", "length"]
type = "float"

[[tensor]]
name = "out"
role = "output"
shape = ["batch_size", "(length - kernel_size) / stride + 1"]
type = "float"
)";

std::string pool_with(const std::string& from, const std::string& to) {
  std::string t = kPoolSpec;
  const size_t at = t.find(from);
  REQUIRE(at != std::string::npos);
  return t.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a tensor's size may be an integer expression over the dims and the integer [fixed] globals", "[user_type]") {
  const UserTypeSpec p = parsed(kPoolSpec);
  const UserTensor& out = p.tensors[1];
  REQUIRE(out.shape.size() == 2);
  CHECK(out.shape[0].dim == "batch_size");
  REQUIRE(out.shape[1].expr != nullptr);
  CHECK(out.shape[1].text() == "(length - kernel_size) / stride + 1");
  CHECK(p.sizes(out, Shape{4, 100}) == Shape{4, 49});
  CHECK(p.numel(out, Shape{1, 3}) == 1);
  CHECK(p.shape_problem(Shape{4, 100}).empty());
  // An undeclared shape where the size is not positive: said, not used.
  CHECK_THAT(p.shape_problem(Shape{4, 1}), Contains("out's size \"(length - kernel_size) / stride + 1\" is 0: expected a positive size"));
  const KernelSpec k = user_kernel_spec(p);
  CHECK(k.args[1].numel(Shape{3, 31}) == 3 * 15);
  CHECK_THAT(k.shape_error(Shape{4, 2}), Contains("expected a positive size"));
  CHECK(k.shape_error(Shape{4, 5}).empty());
  // The plain forms read as before.
  CHECK(parsed(test::kGeluSpec).tensors[0].shape[1].expr == nullptr);
}

TEST_CASE("a size expression that reads no dim nor integer global, or leaves the positive at a declared shape, is refused",
          "[user_type]") {
  CHECK_THAT(error_of(pool_with("(length - kernel_size) / stride + 1", "(length - padding) / stride")),
             Contains("types/t.toml:25: tensor[1].shape = \"(length - padding) / stride\" reads 'padding', which is no dim nor integer "
                      "[fixed] global: expected names among batch_size, length, kernel_size, stride"));
  CHECK_THAT(error_of(pool_with("(length - kernel_size) / stride + 1", "length * scale")), Contains("reads 'scale'"));
  CHECK_THAT(error_of(pool_with("(length - kernel_size) / stride + 1", "padding")),
             Contains("names \"padding\", which is not a dim: expected one of batch_size, length or an integer"));
  CHECK_THAT(error_of(pool_with("(length - kernel_size) / stride + 1", "length * 100000000000")),
             Contains("out has 6.5536e+15 elements: expected at most 2^48"));
  CHECK(parsed(pool_with("(length - kernel_size) / stride + 1", "kernel_size")).tensors[1].shape[1].expr != nullptr);
  CHECK_THAT(error_of(pool_with("(length - kernel_size) / stride + 1", "length ** 2")),
             Contains("tensor[1].shape = \"length ** 2\": at character 9"));
  // The edge shape [1, 3] gives (3 - 4) / 2 + 1 = 0.
  CHECK_THAT(error_of(pool_with("(length - kernel_size) / stride + 1", "(length - kernel_size - 1) / stride + 1")),
             Contains("at shape 1x3: out's size \"(length - kernel_size - 1) / stride + 1\" is 0: expected a positive size"));
  CHECK_THAT(error_of(pool_with("(length - kernel_size) / stride + 1", "length / (length - 3)")),
             Contains("at shape 1x3: out's size \"length / (length - 3)\": division by zero: 3 / 0"));
  CHECK_THAT(error_of(pool_with("(length - kernel_size) / stride + 1", "length * 1000000000 * 10000000000")), Contains("overflows"));
  // A dim used only inside an expression still sizes a tensor.
  const std::string only_in_expr =
      pool_with("shape = [\"batch_size\", \"length\"]", "shape = [\"batch_size * length\"]");
  CHECK(parse_user_type(only_in_expr, "types/t.toml").ok());
}

TEST_CASE("an output may be int64 or a scalar, and a parameter stays floating point", "[user_type]") {
  const UserTypeSpec argmax = parsed(pool_with("name = \"out\"\nrole = \"output\"\nshape = [\"batch_size\", \"(length - kernel_size) / stride + 1\"]\ntype = \"float\"",
                                               "name = \"out\"\nrole = \"output\"\nshape = [\"batch_size\"]\ntype = \"int64\""));
  CHECK(argmax.tensors[1].int64);
  const KernelSpec k = user_kernel_spec(argmax);
  CHECK(k.args[1].elem == Elem::I64);
  CHECK_THAT(k.abi(), Contains("long long* __restrict__ out"));
  CHECK(k.bytes(Shape{4, 100}, DType::F32) == 4.0 * 100 * 4 + 4.0 * 8);

  const UserTypeSpec loss = parsed(pool_with("shape = [\"batch_size\", \"(length - kernel_size) / stride + 1\"]", "shape = []"));
  CHECK(loss.tensors[1].shape.empty());
  CHECK(loss.numel(loss.tensors[1], Shape{4, 100}) == 1);
  CHECK(user_kernel_spec(loss).grid(Shape{4, 100}, LaunchGeometry{256}) == 1);

  CHECK_THAT(error_of(pool_with("name = \"x\"\nrole = \"input\"\nshape = [\"batch_size\", \"length\"]\ntype = \"float\"",
                                "name = \"x\"\nrole = \"parameter\"\nshape = [\"batch_size\", \"length\"]\ntype = \"int64\"")),
             Contains("is an int64 parameter: expected float"));
}

TEST_CASE("every kind a spec may name has its notes and the new kinds parse", "[user_type]") {
  for (const char* kind : {"convolution", "transposed_convolution", "pooling", "normalization", "scan", "index", "loss", "matmul", "model"}) {
    INFO(kind);
    CHECK(std::count(user_type_kinds().begin(), user_type_kinds().end(), kind) == 1);
    CHECK(parse_user_type(pool_with("kind = \"pooling\"", std::string("kind = \"") + kind + "\""), "types/t.toml").ok());
  }
  CHECK_THAT(error_of(pool_with("kind = \"pooling\"", "kind = \"attention\"")), Contains("expected one of"));
}
