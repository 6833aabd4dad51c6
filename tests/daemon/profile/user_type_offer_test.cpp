// `plan --user-types`: hot modules of no type offered as user types, on recorded ranges of a GPT-2
// style block whose modules carry the hook's class fields (daemon/profile/module_hook/sitecustomize.py).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/format.hpp"
#include "config/config.hpp"
#include "daemon/profile/amdahl_plan.hpp"
#include "daemon/profile/module_attribution.hpp"
#include "daemon/profile/profile_data.hpp"
#include "daemon/profile/user_type_offer.hpp"
#include "kernels_cuda/user_type.hpp"
#include "kernels_cuda/user_type_writer.hpp"
#include "tests/kernels_cuda/user_type_fields.hpp"
#include "tests/daemon/profile/module_records.hpp"
#include "tests/support.hpp"

using namespace ak;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char* kGelu = "ak.module:NewGELUActivation sizes=[[8, 1024, 3072]] dtype=fp16 "
                    "class=transformers.activations:NewGELUActivation params=0 buffers=0 leaf=1 init=yes args=1";
const char* kFc = "ak.module:Linear sizes=[[8, 1024, 768]] dtype=fp16 class=torch.nn.modules.linear:Linear params=2 "
                  "buffers=0 leaf=1 init=untried args=1";
const char* kEmbedding = "ak.module:Embedding sizes=[[8, 1024]] dtype= class=torch.nn.modules.sparse:Embedding params=1 "
                         "buffers=0 leaf=1 init=untried args=1";
const char* kScaled = "ak.module:ScaledTanh sizes=[[8, 1024, 768]] dtype=fp16 class=mymodel.layers:ScaledTanh params=0 "
                      "buffers=0 leaf=1 init=no args=1";
const char* kGate = "ak.module:GateProduct sizes=[[8, 1024, 768], [8, 1024, 768]] dtype=fp16 class=mymodel.layers:GateProduct "
                    "params=0 buffers=0 leaf=1 init=yes args=2";
const char* kReduce = "ak.module:Reduce sizes=[[8, 1024, 768]] dtype=fp16 class=mymodel.layers:Reduce params=0 buffers=0 "
                      "leaf=1 init=yes args=1";
/// A range of the hook before it recorded classes: a leaf it cannot know to be one.
const char* kOldGelu = "ak.module:GELU sizes=[[8, 1024, 3072]] dtype=fp16";

/// `steps` calls of a block: embedding, fc (a GEMM), GELU (two kernels), the modules that cannot
/// be offered, and an old-format GELU range.
std::vector<json> gpt2_block(int steps) {
  test::Recorder r;
  double t = 0;
  auto module = [&](const char* range, std::vector<std::pair<const char*, double>> kernels) {
    long long id = r.push(range, t += 1);
    for (auto& [name, us] : kernels) r.kernel(name, t += 1, us);
    r.pop(id, t += 1);
  };
  for (int s = 0; s < steps; ++s) {
    long long block = r.push("ak.module:GPT2Block sizes=[[8, 1024, 768]] dtype=fp16 class=transformers.models.gpt2:GPT2Block "
                             "params=12 buffers=1 leaf=0 init=untried args=1", t += 1);
    module(kEmbedding, {{"indexSelectLargeIndex", 20}});
    module(kFc, {{"nvjet_sm90_hsh_fc", 300}});
    module(kGelu, {{"vectorized_elementwise_kernel<8, pow_tanh>", 30}, {"vectorized_elementwise_kernel<8, mul_add>", 10}});
    module(kScaled, {{"tanh_kernel", 15}});
    module(kGate, {{"mul_kernel_gate", 12}});
    module(kReduce, {{"sum_kernel_user", 11}});
    module(kOldGelu, {{"gelu_kernel_old", 9}});
    r.kernel("add_kernel_residual", t += 1, 5);  // in the block itself, which is no leaf
    r.pop(block, t += 1);
  }
  return r.records;
}

Profile block_profile() {
  auto p = build_profile(gpt2_block(4), 0);
  REQUIRE(p.ok());
  return *p;
}

const ProfiledKernel* row_named(const Profile& p, const std::string& name) {
  for (auto& k : p.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

const UserTypeOffer* offer_of(const std::vector<UserTypeOffer>& offers, const std::string& module) {
  for (auto& o : offers)
    if (o.range.name == module) return &o;
  return nullptr;
}

bool have_python3() { return test::run_shell("command -v python3").exit_code == 0; }

}  // namespace

TEST_CASE("the hook's class fields are read back, and a range without them still parses", "[profile][modules]") {
  auto m = parse_module_range(kGelu);
  REQUIRE(m);
  CHECK(m->name == "NewGELUActivation");
  CHECK(m->class_module == "transformers.activations");
  CHECK(m->class_qualname == "NewGELUActivation");
  CHECK(m->parameters == 0);
  CHECK(m->buffers == 0);
  CHECK(m->leaf == 1);
  CHECK(m->init == "yes");
  CHECK(m->args == 1);
  CHECK(m->sizes == std::vector<std::vector<long long>>{{8, 1024, 3072}});
  auto fc = parse_module_range(kFc);
  REQUIRE(fc);
  CHECK(fc->parameters == 2);
  CHECK(fc->init == "untried");
  auto mlp = parse_module_range("ak.module:LlamaMLP sizes=[[2, 8, 16]] dtype=bf16 linear=gate_proj:16x32,up_proj:16x32,down_proj:32x16 "
                                "act=SiLU class=__main__:Outer.LlamaMLP params=3 buffers=0 leaf=0 init=untried args=1");
  REQUIRE(mlp);
  CHECK(mlp->linears.size() == 3);
  CHECK(mlp->class_qualname == "Outer.LlamaMLP");
  CHECK(mlp->leaf == 0);
  CHECK(classify_module(*mlp) == "swiglu");
  auto old = parse_module_range(kOldGelu);
  REQUIRE(old);
  CHECK(old->class_module.empty());
  CHECK(old->leaf == -1);
  CHECK(old->parameters == -1);
  CHECK(old->init.empty());
  CHECK(old->args == -1);
}

TEST_CASE("the kernels of a leaf module of no type add up to an 'other' candidate, and a GEMM inside a leaf stays a matmul",
          "[profile][modules]") {
  const Profile p = block_profile();
  const ProfiledKernel* gelu = row_named(p, "module NewGELUActivation");
  REQUIRE(gelu);
  CHECK(gelu->type == "other");
  CHECK(gelu->bound == "memory");
  CHECK(gelu->calls == 4);
  CHECK(gelu->total_us == Approx(4 * 40));
  CHECK(gelu->parts.size() == 2);
  CHECK(gelu->shape == std::vector<long long>{8, 1024, 3072});
  CHECK(gelu->dtype == "fp16");
  CHECK_FALSE(row_named(p, "vectorized_elementwise_kernel<8, pow_tanh>"));
  // nn.Linear is a leaf, but its GEMM is one of autokernel's types: it keeps its own row.
  CHECK_FALSE(row_named(p, "module Linear"));
  REQUIRE(row_named(p, "nvjet_sm90_hsh_fc"));
  CHECK(row_named(p, "nvjet_sm90_hsh_fc")->type == "matmul");
  CHECK(row_named(p, "module Embedding"));
  // A range without the class fields (an older hook) and a kernel in a module that is no leaf: rows of their own.
  CHECK(row_named(p, "gelu_kernel_old"));
  CHECK(row_named(p, "add_kernel_residual"));
  // The candidate's range survives the profile's JSON, so plan reads the fields from a file.
  auto back = profile_from_json(json(p));
  REQUIRE(back.ok());
  CHECK(row_named(*back, "module NewGELUActivation")->nvtx == kGelu);
}

TEST_CASE("a convolution's GEMM kernels, implicit or cuBLAS's, are its Conv module's work, and a 4-D module's dims are named",
          "[profile][modules][user_type]") {
  test::Recorder r;
  double t = 0;
  const char* conv = "ak.module:Conv2d sizes=[[32, 64, 56, 56]] dtype=fp16 class=torch.nn.modules.conv:Conv2d params=1 "
                     "buffers=0 leaf=1 init=args kwargs={\"bias\":false,\"in_channels\":64,\"kernel_size\":[1,1],"
                     "\"out_channels\":64} train=0 args=1";
  const char* relu = "ak.module:ReLU sizes=[[32, 64, 56, 56]] dtype=fp16 class=torch.nn.modules.activation:ReLU params=0 "
                     "buffers=0 leaf=1 init=yes train=0 args=1";
  for (int s = 0; s < 3; ++s) {
    long long id = r.push(conv, t += 1);
    r.kernel("nvjet_sm90_hsh_128x192_64x5_2x1_v_bz_coopB_TNN", t += 1, 50);   // a 1x1 convolution as cuBLAS runs it
    r.kernel("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc", t += 1, 30);
    r.pop(id, t += 1);
    id = r.push(relu, t += 1);
    r.kernel("vectorized_elementwise_kernel<4, relu>", t += 1, 10);
    r.pop(id, t += 1);
  }
  auto p = build_profile(r.records, 0);
  REQUIRE(p.ok());
  const ProfiledKernel* row = row_named(*p, "module Conv2d");
  REQUIRE(row);
  CHECK(row->type == "other");
  CHECK(row->total_us == Approx(3 * 80));
  CHECK_FALSE(row_named(*p, "nvjet_sm90_hsh_128x192_64x5_2x1_v_bz_coopB_TNN"));
  // The ReLU's spec names its four dims as a layer's (dim3 would be CUDA's type, no argument's name).
  auto offers = user_type_offers(make_plan(*p, 10, 2.0));
  const UserTypeOffer* o = offer_of(offers, "ReLU");
  REQUIRE(o);
  REQUIRE(o->refusal.empty());
  auto spec = parse_user_type(offer_spec_text(*o, "vision.json"), "relu.toml");
  INFO((spec ? "" : spec.error().message));
  REQUIRE(spec.ok());
  CHECK(spec->dims == std::vector<std::string>{"batch_size", "channels", "height", "width"});
}

TEST_CASE("plan offers a parameter-free leaf built with no arguments and refuses the others with the reason", "[profile][plan][user_type]") {
  const auto offers = user_type_offers(make_plan(block_profile(), 20, 2.0));
  const UserTypeOffer* gelu = offer_of(offers, "NewGELUActivation");
  REQUIRE(gelu);
  CHECK(gelu->refusal.empty());
  CHECK(gelu->name == "new_gelu_activation");
  REQUIRE(offer_of(offers, "Embedding"));
  CHECK_THAT(offer_of(offers, "Embedding")->refusal, Catch::StartsWith("has parameters (1)"));
  CHECK(offer_of(offers, "Embedding")->name.empty());
  REQUIRE(offer_of(offers, "ScaledTanh"));
  CHECK_THAT(offer_of(offers, "ScaledTanh")->refusal, Catch::Contains("needs constructor arguments: ScaledTanh() fails"));
  REQUIRE(offer_of(offers, "GateProduct"));
  CHECK_THAT(offer_of(offers, "GateProduct")->refusal, Catch::StartsWith("several inputs (2 arguments, 2 tensors)"));
  // "reduce" is a built-in type's name: the user type takes another.
  REQUIRE(offer_of(offers, "Reduce"));
  CHECK(offer_of(offers, "Reduce")->name == "reduce_2");
  CHECK_FALSE(offer_of(offers, "Linear"));
  CHECK_FALSE(offer_of(offers, "GPT2Block"));
  const std::string toml = user_type_offers_toml(offers, "types", 2.0);
  CHECK_THAT(toml, Catch::Contains("[[kernel]]\nspec = \"types/new_gelu_activation.toml\""));
  CHECK_THAT(toml, Catch::Contains("# not offered: module Embedding") && Catch::Contains("has parameters (1)"));
  CHECK_THAT(toml, Catch::Contains("dtype = \"fp16\"\nweight = " + format_numbers("%.4f", gelu->f)));
  CHECK_THAT(toml, Catch::Contains("baseline_us = 40.00"));
}

TEST_CASE("a module is refused where the profile cannot vouch for its reference", "[profile][plan][user_type]") {
  auto refused = [](const std::string& fields, double f = 0.2) {
    Plan plan;
    PlanRow row;
    row.kernel.type = "other";
    row.kernel.module = "Act";
    row.kernel.nvtx = "ak.module:Act sizes=[[4, 64]] dtype=fp32" + fields;
    row.f = f;
    plan.rows.push_back(row);
    auto offers = user_type_offers(plan);
    REQUIRE(offers.size() == 1);
    return offers[0].refusal;
  };
  const std::string ok = " class=pkg.acts:Act params=0 buffers=0 leaf=1 init=yes args=1";
  CHECK(refused(ok).empty());
  CHECK_THAT(refused(""), Catch::Contains("profile again with --modules"));
  CHECK_THAT(refused(" class=pkg.acts:Act params=0 buffers=0 leaf=0 init=untried args=1"), Catch::StartsWith("not a leaf"));
  CHECK_THAT(refused(" class=pkg.acts:Act params=0 buffers=2 leaf=1 init=untried args=1"), Catch::StartsWith("has buffers (2)"));
  CHECK_THAT(refused(" class=pkg.acts:Act params=0 buffers=0 leaf=1 init=differs args=1"), Catch::Contains("other than its defaults"));
  CHECK_THAT(refused(" class=__main__:Act params=0 buffers=0 leaf=1 init=yes args=1"), Catch::Contains("main script"));
  CHECK_THAT(refused(" class=pkg.acts:make.<locals>.Act params=0 buffers=0 leaf=1 init=yes args=1"),
             Catch::Contains("not importable by its path"));
  CHECK_THAT(refused(" class=torch.nn.modules.container:Sequential params=0 buffers=0 leaf=1 init=yes args=1"), Catch::Contains("container"));
  CHECK_THAT(refused(" class=torch.nn.modules.dropout:Dropout params=0 buffers=0 leaf=1 init=yes args=1"), Catch::Contains("dropout"));
  CHECK_THAT(refused(ok, 0.001), Catch::Contains("not worth a run"));
}

TEST_CASE("a torch.nn layer with weights is offered where its own arguments rebuild it, its reference building it so",
          "[profile][plan][user_type]") {
  auto offer = [](const std::string& fields) {
    Plan plan;
    PlanRow row;
    row.kernel.type = "other";
    row.kernel.module = "Conv2d";
    row.kernel.nvtx = "ak.module:Conv2d sizes=[[32, 64, 56, 56]] dtype=fp16" + fields;
    row.f = 0.2;
    plan.rows.push_back(row);
    return user_type_offers(plan).at(0);
  };
  const std::string conv = " class=torch.nn.modules.conv:Conv2d params=2 buffers=0 leaf=1 init=args "
                           "kwargs={\"bias\":true,\"in_channels\":64,\"kernel_size\":[3,3],\"out_channels\":64,"
                           "\"padding\":[1,1],\"padding_mode\":\"zeros\",\"stride\":[1,1]} train=0 args=1";
  const UserTypeOffer o = offer(conv);
  CHECK(o.refusal.empty());
  CHECK(o.name == "conv2d");
  const std::string py = offer_reference_source(o);
  // The arguments travel as JSON the reference parses; the channels its arguments fix stay literal,
  // the batch and the image's sides are sizes a stage may scale.
  CHECK_THAT(py, Catch::Contains("_KWARGS = json.loads(\"{\\\"bias\\\":true") && Catch::Contains("self.module = cls(**_KWARGS)") &&
                     Catch::Contains("self.module.eval()") && Catch::Contains("torch.randn(batch_size, 64, height, width)") &&
                     Catch::Contains("batch_size = 32\nheight = 56\nwidth = 56\n"));
  CHECK_THAT(offer(" class=torch.nn.modules.conv:Conv2d params=2 buffers=0 leaf=1 init=untried train=0 args=1").refusal,
             Catch::StartsWith("has parameters (2) and is not a torch.nn layer its arguments rebuild"));
  // Arguments that are not literals (an object, a long list) are not written into a reference.
  CHECK_THAT(offer(" class=torch.nn.modules.conv:Conv2d params=2 buffers=0 leaf=1 init=args kwargs={\"a\":{\"b\":1}} args=1").refusal,
             Catch::Contains("not a JSON object of numbers"));
  CHECK_THAT(offer(" class=torch.nn.modules.conv:Conv2d params=2 buffers=0 leaf=1 init=args kwargs={\"a\":[1,2,3,4,5,6,7,8,9]} args=1").refusal,
             Catch::Contains("not a JSON object of numbers"));
  if (!have_python3()) {
    WARN("python3 is not installed: the reference's syntax is not checked");
    return;
  }
  test::TempDir d;
  const std::string path = (d.path / "conv2d.py").string();
  std::ofstream(path) << py;
  auto r = test::run_shell("python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' " + path);
  INFO(r.out);
  CHECK(r.exit_code == 0);
  if (test::run_shell("python3 -c 'import torch'").exit_code != 0) {
    WARN("torch is not installed: the reference is not run");
    return;
  }
  // Run, it builds the layer the program ran: a 3x3 convolution of 64 channels, in eval mode.
  auto run = test::run_shell("python3 -c 'import runpy, sys; g = runpy.run_path(sys.argv[1]); m = g[\"Model\"](); "
                             "y = m(*g[\"get_inputs\"]()); print(tuple(y.shape), m.module.training, m.module.bias is not None)' " + path);
  INFO(run.out);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains("(32, 64, 56, 56) False True"));
  // Its spec is the importer's reading of that reference: the layer's weights are the kernel's
  // inputs after x, the output's shape is what the layer computes.
  std::vector<UserTypeOffer> offers{o};
  std::vector<std::string> kept;
  const std::string dir = (d.path / "types").string();
  auto written = write_user_type_offers(offers, dir, "vision.json", "python3", kept);
  INFO((written ? "" : written.error().message));
  REQUIRE(written.ok());
  INFO(offers[0].refusal);
  REQUIRE(offers[0].refusal.empty());
  auto spec = load_user_type(dir + "/conv2d.toml");
  INFO((spec ? "" : spec.error().message));
  REQUIRE(spec.ok());
  CHECK(spec->dtypes == std::vector<DType>{DType::F16, DType::F32});
  std::vector<std::string> names;
  for (auto& t : spec->tensors) names.push_back(t.name + ":" + tensor_role_name(t.role));
  CHECK(names == std::vector<std::string>{"x:input", "module_weight:parameter", "module_bias:parameter", "out:output"});
  CHECK(spec->sizes(spec->tensors.back(), spec->bench) == Shape{32, 64, 56, 56});
}

TEST_CASE("a module whose kernel reduces is offered as row-wise over its last dimension, the others as elementwise",
          "[profile][plan][user_type]") {
  test::Recorder r;
  double t = 0;
  for (int s = 0; s < 4; ++s) {
    long long id = r.push("ak.module:L2Normalize sizes=[[8, 1024, 768]] dtype=fp16 class=mymodel.layers:L2Normalize params=0 "
                          "buffers=0 leaf=1 init=yes args=1", t += 1);
    r.kernel("triton_per_fused_div_linalg_vector_norm_0", t += 1, 14);
    r.pop(id, t += 1);
    r.kernel("nvjet_sm90_hsh_elsewhere", t += 1, 40);
  }
  auto p = build_profile(r.records, 0);
  REQUIRE(p.ok());
  const auto offers = user_type_offers(make_plan(*p, 20, 2.0));
  const UserTypeOffer* norm = offer_of(offers, "L2Normalize");
  REQUIRE(norm);
  REQUIRE(norm->refusal.empty());
  auto spec = parse_user_type(offer_spec_text(*norm, "p.json"), "types/l2_normalize.toml");
  INFO((spec ? "" : spec.error().message));
  REQUIRE(spec.ok());
  CHECK(spec->kind == "rowwise");
  CHECK(spec->grid == GridRule::Rows);
  CHECK_THAT(spec->summary, Catch::Contains("Row-wise over the last dimension (its kernel triton_per_fused_div_linalg_vector_norm_0 reduces)"));
  auto gelu = parse_user_type(offer_spec_text(*offer_of(user_type_offers(make_plan(block_profile(), 20, 2.0)), "NewGELUActivation"), "p.json"),
                              "types/new_gelu_activation.toml");
  REQUIRE(gelu.ok());
  CHECK(gelu->kind == "elementwise");
  CHECK(gelu->grid == GridRule::Elements);
}

TEST_CASE("an offered spec reads back as the module it offers, and writes again as the same text", "[profile][plan][user_type]") {
  const auto offers = user_type_offers(make_plan(block_profile(), 20, 2.0));
  const UserTypeOffer* gelu = offer_of(offers, "NewGELUActivation");
  REQUIRE(gelu);
  REQUIRE(gelu->refusal.empty());
  const std::string text = offer_spec_text(*gelu, "p.json");
  CHECK(text.rfind("# Written by `autokernel plan --user-types` from p.json: the module NewGELUActivation, ", 0) == 0);
  CHECK(text.find("\nbench = [8, 1024, 3072]   # the profiled call's shape\n") != std::string::npos);
  auto spec = parse_user_type(text, "types/new_gelu_activation.toml");
  INFO((spec ? "" : spec.error().message));
  REQUIRE(spec.ok());
  CHECK(spec->name == "new_gelu_activation");
  CHECK(spec->reference == "new_gelu_activation.py");
  CHECK(spec->dtypes == std::vector<DType>{DType::F16, DType::F32});   // the recorded dtype first
  CHECK(spec->metric == Metric::GBps);
  CHECK(spec->dims == std::vector<std::string>{"batch_size", "seq_len", "dim"});
  CHECK(spec->bench == Shape{8, 1024, 3072});
  REQUIRE(spec->tensors.size() == 2);
  CHECK(spec->tensors[0].name == "x");
  CHECK(spec->tensors[0].role == TensorRole::Input);
  CHECK(test::size_terms_text(spec->tensors[0].shape) == "[dim batch_size, dim seq_len, dim dim]");
  CHECK(spec->tensors[1].name == "out");
  CHECK(spec->tensors[1].role == TensorRole::Output);
  auto again = parse_user_type(user_type_toml(*spec), "types/new_gelu_activation.toml");
  REQUIRE(again.ok());
  test::check_same_user_type(*spec, *again);
}

TEST_CASE("a class name becomes a user type's name in snake case", "[profile][plan][user_type]") {
  CHECK(snake_case_type_name("NewGELUActivation") == "new_gelu_activation");
  CHECK(snake_case_type_name("GELU") == "gelu");
  CHECK(snake_case_type_name("SiLUAndMul") == "si_lu_and_mul");
  CHECK(snake_case_type_name("_PrivateAct") == "private_act");
  CHECK(snake_case_type_name("Act2D") == "act2_d");
  CHECK(snake_case_type_name("___") == "module");
  CHECK(snake_case_type_name(std::string(80, 'A')).size() <= 44);
}

TEST_CASE("the written spec parses as a user type beside a reference that is valid Python", "[profile][plan][user_type]") {
  auto offers = user_type_offers(make_plan(block_profile(), 20, 2.0));
  test::TempDir d;
  const std::string dir = (d.path / "types").string();
  std::vector<std::string> kept;
  REQUIRE(write_user_type_offers(offers, dir, "gpt2.json", "python3", kept).ok());
  CHECK(kept.empty());
  CHECK_FALSE(fs::exists(d.path / "types" / "embedding.toml"));  // refused: nothing written
  auto spec = load_user_type(dir + "/new_gelu_activation.toml");
  INFO((spec ? "" : spec.error().message));
  REQUIRE(spec.ok());
  CHECK(spec->name == "new_gelu_activation");
  CHECK(spec->kind == "elementwise");
  CHECK(spec->grid == GridRule::Elements);
  CHECK(spec->dims == std::vector<std::string>{"batch_size", "seq_len", "dim"});
  CHECK(spec->bench == Shape{8, 1024, 3072});
  CHECK(spec->dtypes == std::vector<DType>{DType::F16, DType::F32});
  REQUIRE(spec->tensors.size() == 2);
  CHECK(spec->tensors[0].role == TensorRole::Input);
  CHECK(spec->tensors[1].role == TensorRole::Output);
  CHECK(spec->sizes(spec->tensors[1], spec->bench) == Shape{8, 1024, 3072});
  CHECK_THAT(spec->summary, Catch::Contains("is assumed") && Catch::Contains("reference process checks"));
  const std::string py = spec->reference_source;
  CHECK_THAT(py, Catch::Contains("class Model(nn.Module):") && Catch::Contains("importlib.import_module(\"transformers.activations\")") &&
                     Catch::Contains("batch_size = 8\nseq_len = 1024\ndim = 3072\n") &&
                     Catch::Contains("torch.randn(batch_size, seq_len, dim)") && Catch::Contains("def get_init_inputs():\n    return []"));
  // A spec edited by the user is kept the next time.
  std::ofstream(dir + "/new_gelu_activation.toml") << spec->text << "\n# edited\n";
  REQUIRE(write_user_type_offers(offers, dir, "gpt2.json", "python3", kept).ok());
  CHECK(kept == std::vector<std::string>{(fs::path(dir) / "new_gelu_activation.toml").string()});
  CHECK_THAT(test::read_file(dir + "/new_gelu_activation.toml"), Catch::EndsWith("# edited\n"));
  if (!have_python3()) {
    WARN("python3 is not installed: the reference's syntax is not checked");
    return;
  }
  for (const char* file : {"new_gelu_activation.py", "reduce_2.py"}) {
    auto r = test::run_shell("python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' " + dir + "/" + file);
    INFO(r.out);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("plan --user-types with a layer to offer and no such --python exits 2 before writing anything", "[profile][cli][user_type]") {
  test::Recorder r;
  double t = 0;
  for (int s = 0; s < 2; ++s) {
    long long id = r.push("ak.module:Conv2d sizes=[[8, 3, 32, 32]] dtype=fp16 class=torch.nn.modules.conv:Conv2d params=2 buffers=0 "
                          "leaf=1 init=args kwargs={\"in_channels\":3,\"kernel_size\":[3,3],\"out_channels\":8} train=0 args=1",
                          t += 1);
    r.kernel("sm90_xmma_fprop_implicit_gemm_f16f16", t += 1, 50);
    r.pop(id, t += 1);
  }
  auto p = build_profile(r.records, 0);
  REQUIRE(p.ok());
  test::TempDir d;
  const std::string prof = d.write("vision.json", json(*p).dump());
  auto run = test::run_autokernel("plan " + prof + " --user-types " + (d.path / "types").string() + " --python " +
                                  (d.path / "no-python").string());
  INFO(run.out);
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.out, Catch::Contains("no such Python") && Catch::Contains("module Conv2d"));
  CHECK_FALSE(fs::exists(d.path / "types"));
}

TEST_CASE("plan --user-types on the command line writes the files, and --write makes a config that loads them", "[profile][cli][user_type]") {
  test::TempDir d;
  const Profile p = block_profile();
  const std::string prof = d.write("gpt2.json", json(p).dump());
  auto r = test::run_autokernel("plan " + prof + " --top 20 --user-types " + (d.path / "out").string());
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(d.path / "out" / "new_gelu_activation.py"));
  CHECK(fs::exists(d.path / "out" / "new_gelu_activation.toml"));
  CHECK_THAT(r.out, Catch::Contains("spec = \"" + (d.path / "out" / "new_gelu_activation.toml").string() + "\""));
  CHECK_THAT(r.out, Catch::Contains("# not offered: module Embedding") && Catch::Contains("needs constructor arguments"));
  // The config lies in another folder: its spec paths are relative to it.
  fs::create_directories(d.path / "configs");
  const std::string cfg = d.write("configs/run.toml", "[run]\nname = \"planned\"\n");
  auto w = test::run_autokernel("plan " + prof + " --top 20 --user-types " + (d.path / "types").string() + " --write " + cfg);
  INFO(w.out);
  CHECK(w.exit_code == 0);
  CHECK_THAT(test::read_file(cfg), Catch::Contains("spec = \"../types/new_gelu_activation.toml\""));
  CHECK_THAT(w.out, Catch::Contains("it checks"));
  auto c = load_config(cfg);
  REQUIRE(c.ok());
  bool gelu = false;
  for (auto& k : c->kernels) gelu |= k.type == "new_gelu_activation" && k.dtype == "fp16" && k.user_type;
  CHECK(gelu);
}
