// Module attribution on recorded ranges: the NVTX ranges daemon/profile/module_hook/sitecustomize.py
// pushes around a LLaMA decoder layer's modules, with the kernels PyTorch launches inside them.
#include <catch2/catch.hpp>

#include <tuple>

#include "daemon/profile/amdahl_plan.hpp"
#include "daemon/profile/module_attribution.hpp"
#include "daemon/profile/profile_data.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/daemon/profile/module_records.hpp"

using namespace ak;
using nlohmann::json;

namespace {

using test::Recorder;

const char* kNorm = "ak.module:LlamaRMSNorm sizes=[[2, 2048, 2048]] dtype=fp16";
const char* kMlp = "ak.module:LlamaMLP sizes=[[2, 2048, 2048]] dtype=fp16 linear=gate_proj:2048x5632,up_proj:2048x5632,"
                   "down_proj:5632x2048 act=SiLUActivation";
const char* kRotary = "ak.function:apply_rotary_pos_emb sizes=[[2, 16, 2048, 128], [2, 16, 2048, 128], [1, 2048, 128], [1, 2048, 128]] dtype=fp16";

/// One decoder layer, `layers` times: norm (5 kernels), attention (a GEMM, the rotary helper's
/// cat and muls, flash attention), MLP (three GEMMs, silu, mul).
std::vector<json> llama_layers(int layers) {
  Recorder r;
  double t = 0;
  for (int l = 0; l < layers; ++l) {
    long long layer = r.push("ak.module:LlamaDecoderLayer sizes=[[2, 2048, 2048]] dtype=fp16", t += 1);
    long long norm = r.push(kNorm, t += 1);
    for (const char* k : {"pow_kernel", "mean_reduce_kernel", "rsqrt_kernel", "mul_kernel", "mul_weight_kernel"})
      r.kernel(k, t += 1, 10);
    r.pop(norm, t += 1);
    long long attn = r.push("ak.module:LlamaAttention sizes=[[2, 2048, 2048]] dtype=fp16", t += 1);
    long long lin = r.push("ak.module:Linear sizes=[[2, 2048, 2048]] dtype=fp16", t += 1);
    long long op = r.push("aten::linear, seq = 5, sizes = [[2, 2048, 2048], [6144, 2048], []]", t += 1);
    r.kernel("nvjet_sm90_hsh_qkv", t += 1, 100);
    r.pop(op, t += 1);
    r.pop(lin, t += 1);
    long long rot = r.push(kRotary, t += 1);
    for (const char* k : {"CatArrayBatchedCopy", "mul_kernel", "mul_kernel", "add_kernel"}) r.kernel(k, t += 1, 6);
    r.pop(rot, t += 1);
    r.kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", t += 1, 200);
    r.pop(attn, t += 1);
    // As LlamaMLP.forward runs: down_proj(act_fn(gate_proj(x)) * up_proj(x)), act_fn an nn.SiLU.
    long long mlp = r.push(kMlp, t += 1);
    for (const char* k : {"nvjet_gate", "silu_kernel", "nvjet_up", "mul_kernel", "nvjet_down"}) {
      const bool product = std::string(k) == "mul_kernel";
      long long leaf = product ? -1
                       : r.push(std::string(k) == "silu_kernel" ? "ak.module:SiLU sizes=[[2, 2048, 5632]] dtype=fp16 leaf=1"
                                                                : "ak.module:Linear sizes=[[2, 2048, 2048]] dtype=fp16 leaf=1", t += 1);
      r.kernel(k, t += 1, 50);
      if (!product) r.pop(leaf, t += 1);
    }
    r.pop(mlp, t += 1);
    r.pop(layer, t += 1);
  }
  return r.records;
}

const char* kPhi3Mlp = "ak.module:Phi3MLP sizes=[[2, 2048, 3072]] dtype=fp16 linear=gate_up_proj:3072x16384,"
                       "down_proj:8192x3072 act=SiLU";

/// Phi-3's MLP, `layers` times, as Phi3MLP.forward runs: one gate_up_proj GEMM, its halves by
/// chunk (no kernel), the SiLU module on the gate half, the product, down_proj.
std::vector<json> phi3_mlps(int layers) {
  Recorder r;
  double t = 0;
  for (int l = 0; l < layers; ++l) {
    long long mlp = r.push(kPhi3Mlp, t += 1);
    for (const char* k : {"nvjet_gate_up", "silu_kernel", "mul_kernel", "nvjet_down"}) {
      const std::string name = k;
      const bool product = name == "mul_kernel";
      long long leaf = product ? -1
                       : r.push(name == "silu_kernel" ? "ak.module:SiLU sizes=[[2, 2048, 8192]] dtype=fp16 leaf=1"
                                                      : "ak.module:Linear sizes=[[2, 2048, 3072]] dtype=fp16 leaf=1", t += 1);
      r.kernel(k, t += 1, product || name == "silu_kernel" ? 60 : 300);
      if (!product) r.pop(leaf, t += 1);
    }
    r.pop(mlp, t += 1);
  }
  return r.records;
}

const ProfiledKernel* row_named(const Profile& p, const std::string& name) {
  for (auto& k : p.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace

TEST_CASE("the module hook's ranges are read back with their class, shapes, dtype and Linear children", "[profile][modules]") {
  auto m = parse_module_range(kMlp);
  REQUIRE(m);
  CHECK(m->kind == "module");
  CHECK(m->name == "LlamaMLP");
  CHECK(m->sizes == std::vector<std::vector<long long>>{{2, 2048, 2048}});
  CHECK(m->dtype == "fp16");
  REQUIRE(m->linears.size() == 3);
  CHECK(m->linears[2].name == "down_proj");
  CHECK(m->linears[2].in == 5632);
  CHECK(m->linears[2].out == 2048);
  CHECK_FALSE(parse_module_range("aten::linear, seq = 5, sizes = [[2, 2048, 2048]]"));
  CHECK_FALSE(parse_module_range("ak.mod:Foo"));
}

TEST_CASE("a torch.nn layer's constructor arguments and mode are read back from its range", "[profile][modules]") {
  auto conv = parse_module_range("ak.module:Conv2d sizes=[[2, 3, 16, 16]] dtype=fp16 class=torch.nn.modules.conv:Conv2d params=2 "
                                 "buffers=0 leaf=1 init=args kwargs={\"bias\":false,\"kernel_size\":[3,3]} train=0 args=1");
  REQUIRE(conv);
  CHECK(conv->init == "args");
  CHECK(conv->kwargs == "{\"bias\":false,\"kernel_size\":[3,3]}");
  CHECK(conv->training == 0);
  CHECK(conv->args == 1);
  auto older = parse_module_range("ak.module:GELU sizes=[[2, 3]] dtype=fp16 class=torch.nn.modules.activation:GELU params=0 "
                                  "buffers=0 leaf=1 init=yes args=1");
  REQUIRE(older);
  CHECK(older->kwargs.empty());
  CHECK(older->training == -1);
}

TEST_CASE("a module is classified by its class name, and a gated MLP by its gate, up and down projections", "[profile][modules]") {
  CHECK(classify_module(*parse_module_range(kNorm)) == "rmsnorm");
  CHECK(classify_module(*parse_module_range("ak.module:T5LayerNorm sizes=[[8, 512]] dtype=bf16")) == "layernorm");
  CHECK(classify_module(*parse_module_range("ak.module:Softmax sizes=[[8, 512]] dtype=fp16")) == "softmax");
  CHECK(classify_module(*parse_module_range(kRotary)) == "rotary_embedding");
  CHECK(parse_module_range(kMlp)->activation == "SiLUActivation");
  CHECK(classify_module(*parse_module_range(kMlp)) == "swiglu");
  const std::string gated = "ak.module:GemmaMLP sizes=[[2, 8, 16]] dtype=bf16 linear=gate_proj:16x32,up_proj:16x32,down_proj:32x16";
  CHECK(classify_module(*parse_module_range(gated + " act=SiLU")) == "swiglu");
  // Gated with another activation, or with one the range does not name (an F.silu in forward, a
  // profile of an older hook): the exported op would not run there, so no swiglu row promises it.
  CHECK(classify_module(*parse_module_range(gated + " act=PytorchGELUTanh")) == "");
  CHECK(classify_module(*parse_module_range(gated)) == "");
  // Phi-3's: one Linear holds gate and up, its activation is activation_fn.
  CHECK(classify_module(*parse_module_range(kPhi3Mlp)) == "swiglu");
  // GPT-2's MLP has no gate: two GEMMs and a GELU are not a SwiGLU.
  CHECK(classify_module(*parse_module_range("ak.module:GPT2MLP sizes=[[8, 1024, 768]] dtype=fp16 linear=c_fc:768x3072,c_proj:3072x768")) == "");
  CHECK(classify_module(*parse_module_range("ak.module:LlamaAttention sizes=[[2, 2048, 2048]] dtype=fp16")) == "");
  CHECK(classify_module(*parse_module_range("ak.function:rotate_half sizes=[[2, 16, 2048, 128]] dtype=fp16")) == "");
}

TEST_CASE("a module's shape is read in its type's terms from its inputs", "[profile][modules]") {
  CHECK(module_shape("rmsnorm", *parse_module_range(kNorm)) == std::vector<long long>{4096, 2048});
  // q and k, 16 heads each: one rotation over 32 heads.
  CHECK(module_shape("rotary_embedding", *parse_module_range(kRotary)) == std::vector<long long>{2, 16, 16, 2048, 128, 1});
  // Grouped-query attention: k has fewer heads; the hook names q's layout.
  auto gqa = parse_module_range("ak.function:apply_rotary_pos_emb sizes=[[2, 32, 2048, 128], [2, 8, 2048, 128], [2, 2048, 128], "
                                "[2, 2048, 128]] dtype=bf16 layout=2");
  REQUIRE(gqa);
  CHECK(module_shape("rotary_embedding", *gqa) == std::vector<long long>{2, 32, 8, 2048, 128, 2});
  // The gate product: tokens by the gate projection's features.
  CHECK(module_shape("swiglu", *parse_module_range(kMlp)) == std::vector<long long>{4096, 5632, 5632});
  // One fused gate_up projection: its halves, each rows of 8192 read 16384 apart.
  CHECK(module_shape("swiglu", *parse_module_range(kPhi3Mlp)) == std::vector<long long>{4096, 8192, 16384});
  CHECK(module_shape("swiglu", *parse_module_range("ak.module:Phi3MLP sizes=[[2, 8, 16]] dtype=fp16 "
                                                   "linear=gate_up_proj:16x63,down_proj:31x16 act=SiLU")).empty());
  // A gate whose input is not the module's width is not read as one.
  CHECK(module_shape("swiglu", *parse_module_range("ak.module:LlamaMLP sizes=[[2, 8, 16]] dtype=fp16 "
                                                   "linear=gate_proj:32x64,up_proj:16x64,down_proj:64x16")).empty());
  CHECK(module_shape("rmsnorm", *parse_module_range("ak.module:LlamaRMSNorm sizes=[] dtype=")).empty());
}

TEST_CASE("the kernels inside a classified module add up to one candidate with its calls, time and shape", "[profile][modules]") {
  auto p = build_profile(llama_layers(3), 0);
  REQUIRE(p.ok());
  const ProfiledKernel* norm = row_named(*p, "module LlamaRMSNorm");
  REQUIRE(norm);
  CHECK(norm->type == "rmsnorm");
  CHECK(norm->calls == 3);                      // three layers: three module calls
  CHECK(norm->total_us == Approx(3 * 5 * 10));  // five 10 us kernels a call
  CHECK(norm->mean_us == Approx(50));
  CHECK(norm->parts.size() == 5);
  CHECK(norm->shape == std::vector<long long>{4096, 2048});
  CHECK(norm->dtype == "fp16");
  const ProfiledKernel* rotary = row_named(*p, "function apply_rotary_pos_emb");
  REQUIRE(rotary);
  CHECK(rotary->type == "rotary_embedding");
  CHECK(rotary->total_us == Approx(3 * 4 * 6));
  const ProfiledKernel* mlp = row_named(*p, "module LlamaMLP");
  REQUIRE(mlp);
  CHECK(mlp->type == "swiglu");
  CHECK(mlp->shape == std::vector<long long>{4096, 5632, 5632});
  // The row is the gate product alone (the SiLU and the product, 50 us each a call) ...
  CHECK(mlp->total_us == Approx(3 * 2 * 50));
  CHECK(mlp->mean_us == Approx(100));
  CHECK(mlp->parts == std::vector<std::string>{"mul_kernel", "silu_kernel"});
  // ... and its projections are matmul rows of their own, not an "other" Linear module.
  for (const char* gemm : {"nvjet_gate", "nvjet_up", "nvjet_down"}) {
    const ProfiledKernel* k = row_named(*p, gemm);
    REQUIRE(k);
    CHECK(k->type == "matmul");
    CHECK(k->calls == 3);
  }
  CHECK_FALSE(row_named(*p, "module Linear"));
  // Kernels in no classified module keep their own rows: the attention's projection stays a
  // matmul with its operator's range, flash attention stays flash attention.
  const ProfiledKernel* qkv = row_named(*p, "nvjet_sm90_hsh_qkv");
  REQUIRE(qkv);
  CHECK(qkv->type == "matmul");
  CHECK_THAT(qkv->nvtx, Catch::StartsWith("aten::linear"));
  CHECK(row_named(*p, "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16"));
  // A module's kernels are counted once: not also as rows of their own.
  CHECK_FALSE(row_named(*p, "pow_kernel"));
  CHECK_FALSE(row_named(*p, "CatArrayBatchedCopy"));
  double shares = 0, us = 0;
  for (auto& k : p->kernels) shares += k.share, us += k.total_us;
  CHECK(shares == Approx(1.0));
  CHECK(us == Approx(3 * (50 + 100 + 24 + 200 + 250)));
}

TEST_CASE("a module candidate records its CPU time and launches per call, and the profile the GPU's busy time and span", "[profile][modules]") {
  auto p = build_profile(llama_layers(3), 0);
  REQUIRE(p.ok());
  const ProfiledKernel* norm = row_named(*p, "module LlamaRMSNorm");
  REQUIRE(norm);
  // Pushed, five launches 1 ns apart, popped: 6 ns a call on the CPU.
  CHECK(norm->cpu_us_per_call == Approx(0.006));
  CHECK(norm->launches_per_call == Approx(5));
  const ProfiledKernel* mlp = row_named(*p, "module LlamaMLP");
  REQUIRE(mlp);
  CHECK(mlp->launches_per_call == Approx(2));  // the SiLU and the product: its GEMMs are matmul rows
  CHECK(mlp->range_launches_per_call == Approx(5));  // all five inside its range
  CHECK(norm->range_launches_per_call == Approx(5));
  CHECK(mlp->cpu_us_per_call > 0);
  const ProfiledKernel* qkv = row_named(*p, "nvjet_sm90_hsh_qkv");
  REQUIRE(qkv);
  CHECK(qkv->cpu_us_per_call == -1);  // a kernel's own row: no module call to time
  // 48 kernels of 1872 µs in all, 1 µs apart on the GPU.
  CHECK(p->gpu_busy_us == Approx(1872));
  CHECK(p->gpu_span_us == Approx(1872 + 47));
  auto back = profile_from_json(json(*p));
  REQUIRE(back.ok());
  CHECK(row_named(*back, "module LlamaRMSNorm")->cpu_us_per_call == Approx(0.006));
  CHECK(row_named(*back, "module LlamaRMSNorm")->launches_per_call == Approx(5));
  CHECK(back->gpu_busy_us == Approx(1872));
  // A profile written before they were recorded loads, with none of them.
  json old = json(*p);
  old.erase("gpu_busy_us");
  old.erase("gpu_span_us");
  for (auto& k : old["kernels"]) k.erase("cpu_us_per_call"), k.erase("launches_per_call");
  auto older = profile_from_json(old);
  REQUIRE(older.ok());
  CHECK(older->gpu_busy_us == -1);
  CHECK(row_named(*older, "module LlamaRMSNorm")->cpu_us_per_call == -1);
  CHECK(row_named(*older, "module LlamaRMSNorm")->launches_per_call == -1);
}

TEST_CASE("a profile with module candidates survives its JSON and the plan counts them with their shapes", "[profile][modules]") {
  auto p = build_profile(llama_layers(2), 0);
  REQUIRE(p.ok());
  auto back = profile_from_json(json(*p));
  REQUIRE(back.ok());
  const ProfiledKernel* norm = row_named(*back, "module LlamaRMSNorm");
  REQUIRE(norm);
  CHECK(norm->module == "LlamaRMSNorm");
  CHECK(norm->shape == std::vector<long long>{4096, 2048});
  CHECK(norm->parts.size() == 5);
  Plan plan = make_plan(*back, 10, 2.0);
  bool planned_norm = false, planned_rotary = false;
  for (auto& r : plan.rows) {
    if (r.kernel.type == "rmsnorm") {
      planned_norm = true;
      CHECK(r.supported);
      CHECK(r.shape == std::vector<long long>{4096, 2048});
      CHECK_THAT(r.shape_source, Catch::Contains("LlamaRMSNorm"));
    }
    if (r.kernel.type == "rotary_embedding") planned_rotary = r.shape == std::vector<long long>{2, 16, 16, 2048, 128, 1};
  }
  CHECK(planned_norm);
  CHECK(planned_rotary);
  std::string toml = plan_toml(plan, "llama.json");
  CHECK_THAT(toml, Catch::Contains("type = \"rmsnorm\"\nshape = [4096, 2048]"));
  CHECK_THAT(toml, Catch::Contains("baseline_us = 50.00"));
  CHECK_THAT(toml, Catch::Contains("# module: LlamaRMSNorm, 5 distinct kernels"));
  // The gated MLP is planned as its gate product, with the product's own time as the baseline.
  CHECK_THAT(toml, Catch::Contains("type = \"swiglu\"\nshape = [4096, 5632, 5632]"));
  CHECK_THAT(toml, Catch::Contains("baseline_us = 100.00"));
}

TEST_CASE("a Phi-3 MLP is planned as a swiglu at the stride of its fused projection's halves", "[profile][modules]") {
  auto p = build_profile(phi3_mlps(2), 0);
  REQUIRE(p.ok());
  const ProfiledKernel* mlp = row_named(*p, "module Phi3MLP");
  REQUIRE(mlp);
  CHECK(mlp->type == "swiglu");
  CHECK(mlp->shape == std::vector<long long>{4096, 8192, 16384});
  CHECK(mlp->total_us == Approx(2 * 2 * 60));   // the SiLU and the product; the GEMMs are matmul rows
  Plan plan = make_plan(*p, 10, 2.0);
  bool planned = false;
  for (auto& r : plan.rows)
    if (r.kernel.type == "swiglu") {
      planned = true;
      CHECK(r.supported);
      CHECK(r.shape == std::vector<long long>{4096, 8192, 16384});
    }
  CHECK(planned);
  CHECK_THAT(plan_toml(plan, "phi3.json"), Catch::Contains("type = \"swiglu\"\nshape = [4096, 8192, 16384]"));
}

TEST_CASE("ten thousand module ranges are attributed in one sweep", "[profile][modules]") {
  // 800 layers: about 10k ranges and 12k kernels; a per-kernel scan of every range took minutes.
  auto p = build_profile(llama_layers(800), 0);
  REQUIRE(p.ok());
  CHECK(row_named(*p, "module LlamaRMSNorm")->calls == 800);
}

namespace {

/// An nn.Linear's range as the hook writes it, with the torch.nn arguments it keeps.
std::string linear_range(int in, int out, bool bias) {
  return "ak.module:Linear sizes=[[2, 2048, " + std::to_string(in) + "]] dtype=bf16 class=torch.nn.modules.linear:Linear params=" +
         std::to_string(bias ? 2 : 1) + " buffers=0 leaf=1 init=args kwargs={\"bias\":" + (bias ? "true" : "false") +
         ",\"in_features\":" + std::to_string(in) + ",\"out_features\":" + std::to_string(out) + "} train=0 args=1";
}

/// Two decoder-like steps of three Linears: q (2048 -> 2048, a bias) and k (2048 -> 1024) run the
/// same GEMM kernel, gate (2048 -> 6144) another.
std::vector<json> linear_layers() {
  Recorder r;
  double t = 0;
  for (int l = 0; l < 2; ++l)
    for (auto [in, out, bias, kernel, us] : {std::tuple{2048, 2048, true, "nvjet_sm90_tst_a", 40.0},
                                             {2048, 1024, false, "nvjet_sm90_tst_a", 20.0},
                                             {2048, 6144, false, "nvjet_sm90_tst_b", 120.0}}) {
      long long lin = r.push(linear_range(in, out, bias), t += 1);
      r.kernel(kernel, t += 1, us);
      r.pop(lin, t += 1);
    }
  return r.records;
}

}  // namespace

TEST_CASE("an nn.Linear's range gives its GEMM in matmul's terms: tokens, out_features, in_features, bias", "[profile][modules][matmul]") {
  auto m = parse_module_range(linear_range(2048, 6144, true));
  REQUIRE(m);
  CHECK(linear_gemm_shape(*m) == std::vector<long long>{4096, 6144, 2048, 1});
  m = parse_module_range(linear_range(2048, 1024, false));
  CHECK(linear_gemm_shape(*m) == std::vector<long long>{4096, 1024, 2048, 0});
  // Nothing to read, or a range that contradicts itself: no shape rather than a wrong one.
  CHECK(linear_gemm_shape(*parse_module_range("ak.module:Linear sizes=[[2, 2048, 2048]] dtype=fp16 leaf=1")).empty());
  CHECK(linear_gemm_shape(*parse_module_range("ak.module:Linear sizes=[[2, 2048, 2048]] dtype=fp16 leaf=1 init=args "
                                              "kwargs={\"bias\":false,\"in_features\":1024,\"out_features\":64}"))
            .empty());   // the input ends in 2048, not in_features
  CHECK(linear_gemm_shape(*parse_module_range(
                              "ak.module:Conv1d sizes=[[2, 2048, 2048]] dtype=fp16 kwargs={\"in_features\":2048,\"out_features\":8}"))
            .empty());
  CHECK(linear_gemm_shape(*parse_module_range("ak.module:Linear sizes=[[4611686018427387904, 4611686018427387904, 8]] "
                                              "dtype=fp16 kwargs={\"in_features\":8,\"out_features\":8}"))
            .empty());   // rows past any believable batch
}

TEST_CASE("the plan writes a matmul version 2 entry at each of the model's Linear shapes", "[profile][modules][matmul]") {
  auto p = build_profile(linear_layers(), 0);
  REQUIRE(p.ok());
  const ProfiledKernel* a = row_named(*p, "nvjet_sm90_tst_a");
  REQUIRE(a);
  CHECK(a->type == "matmul");
  REQUIRE(a->linear_gemms.size() == 2);
  CHECK(a->linear_gemms[0].shape == std::vector<long long>{4096, 2048, 2048, 1});   // the larger share first
  CHECK(a->linear_gemms[0].calls == 2);
  CHECK(a->linear_gemms[0].total_us == Approx(80));
  CHECK(a->linear_gemms[0].dtype == "bf16");
  CHECK(a->linear_gemms[1].shape == std::vector<long long>{4096, 1024, 2048, 0});
  // The shapes survive the profile's JSON.
  auto back = profile_from_json(json(*p));
  REQUIRE(back.ok());
  REQUIRE(row_named(*back, "nvjet_sm90_tst_a"));
  CHECK(row_named(*back, "nvjet_sm90_tst_a")->linear_gemms.size() == 2);
  CHECK(row_named(*back, "nvjet_sm90_tst_b")->linear_gemms.at(0).shape == std::vector<long long>{4096, 6144, 2048, 0});

  Plan plan = make_plan(*back, 10, 2.0);
  const std::string toml = plan_toml(plan, "linear.json");
  INFO(toml);
  CHECK_THAT(toml, Catch::Contains("shape = [4096, 2048, 2048, 1]") && Catch::Contains("shape = [4096, 1024, 2048, 0]") &&
                       Catch::Contains("shape = [4096, 6144, 2048, 0]"));
  CHECK_THAT(toml, Catch::Contains("dtype = \"bf16\""));
  CHECK_THAT(toml, !Catch::Contains("Fill in shape"));
  // The gate GEMM: 240 of the profile's 360 us; its baseline, one call's kernel time.
  CHECK_THAT(toml, Catch::Contains("weight = 0.6667") && Catch::Contains("baseline_us = 120.00"));
  CHECK_THAT(plan_table(plan), Catch::Contains("4096x2048x2048x1 and 1 more Linear shapes"));
  // Each entry is a shape matmul's newest contract accepts.
  for (const PlanRow& r : plan.rows)
    for (const LinearGemm& lg : r.kernel.linear_gemms) CHECK(find_spec("matmul")->shape_error(Shape(lg.shape.begin(), lg.shape.end())).empty());
}
