// Profiles and plans on recorded activity data (tests/data/profile_records.jsonl: the kernel names
// PyTorch 2.11 runs on an H100; ten steps of a GEMM, a softmax, a layer norm, a GELU and attention
// after one second of warm-up).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/text_escape.hpp"
#include "config/config.hpp"
#include "daemon/profile/amdahl_plan.hpp"
#include "kernels_cuda/registry.hpp"
#include "daemon/profile/kernel_classifier.hpp"
#include "daemon/profile/profile_data.hpp"
#include "kernels_cuda/spec.hpp"
#include "tests/support.hpp"

#include <toml++/toml.h>

using namespace ak;

namespace {
Profile recorded(double warmup = 0.5) {
  auto records = read_records(AK_SOURCE_DIR "/tests/data/profile_records.jsonl");
  REQUIRE(records.ok());
  auto p = build_profile(*records, warmup);
  REQUIRE(p.ok());
  return *p;
}
const ProfiledKernel& of_type(const Profile& p, const std::string& type) {
  for (auto& k : p.kernels)
    if (k.type == type) return k;
  FAIL("no kernel of type " << type);
  return p.kernels.front();
}
}  // namespace

TEST_CASE("kernel names are classified as autokernel's types, and memory- or compute-bound", "[profile]") {
  CHECK(classify_kernel("nvjet_sm90_hsh_128x256_64x4_1x2_h_bz_coopA_NNN").type == "matmul");
  CHECK(classify_kernel("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64").type == "matmul");
  auto attn = classify_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7");
  CHECK(attn.type == "flash_attention");
  CHECK(attn.bound == "compute");
  CHECK(classify_kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::Half, float, c10::Half>(...)").type == "softmax");
  // A convolution's implicit GEMM says gemm and xmma too: it is its Conv module's work, not a matmul.
  CHECK(classify_kernel("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64").type == "other");
  CHECK(classify_kernel("void cudnn::cnn::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false>(...)").type == "other");
  CHECK(classify_kernel("void at::native::conv_depthwise2d_forward_kernel<1, c10::Half, int>(...)").type == "other");
  CHECK(classify_kernel("cutlass__5x_cudnn::Kernel<cutlass_tensorop_h16816dgrad_optimized_f16_128x128_32x5_nhwc>").type == "other");
  CHECK(classify_kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float>(...)").type == "layernorm");
  CHECK(classify_kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float, false>(int)").type == "layernorm");
  CHECK(classify_kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float, true>(int)").type == "rmsnorm");
  CHECK(classify_kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)").type == "cross_entropy");
  CHECK(classify_kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>>>>").type == "reduce");
  CHECK(classify_kernel("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>").type == "cross_entropy");
  // autokernel's own gate product, once exported, is the memory-bound swiglu; a kernel that only
  // says swiglu is taken for a fused SwiGLU MLP, GEMMs and all.
  auto gate_product = classify_kernel("void swiglu_kernel<__half>(__half const*, __half const*, __half*, int, int)");
  CHECK(gate_product.type == "swiglu");
  CHECK(gate_product.bound == "memory");
  CHECK(classify_kernel("sm90_fused_swiglu_mlp_bf16_tma").type == "fused_mlp");
  CHECK(classify_kernel("sm90_fused_swiglu_mlp_bf16_tma").bound == "compute");
  auto gelu = classify_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(...)");
  CHECK(gelu.type == "other");
  CHECK(gelu.bound == "memory");
  CHECK(dtype_hint("cunn_SoftMaxForward<8, c10::Half, float, c10::Half>") == "fp16");
  CHECK(dtype_hint("layer_norm_kernel<c10::BFloat16, float>") == "bf16");
  CHECK(demangle("_Z14softmax_kernelI6__halfEvPKT_PS1_ii") == "void softmax_kernel<__half>(__half const*, __half*, int, int)");
  CHECK(demangle("nvjet_sm90_hsh") == "nvjet_sm90_hsh");
}

TEST_CASE("a profile groups kernels by name, ranks them by GPU time and leaves out the warm-up", "[profile]") {
  Profile p = recorded();
  CHECK(p.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(p.kernels_seen == 51);
  CHECK(p.kernels_dropped_in_warmup == 1);
  REQUIRE(p.kernels.size() == 5);
  CHECK(p.kernels[0].type == "matmul");            // 10 x 400 us
  CHECK(p.kernels[0].calls == 10);
  CHECK(p.kernels[0].mean_us == Approx(400));
  CHECK(p.kernels[1].type == "flash_attention");   // 10 x 250 us
  double shares = 0;
  for (auto& k : p.kernels) shares += k.share;
  CHECK(shares == Approx(1.0));
  CHECK(of_type(p, "softmax").share == Approx(120.0 / 870));
  CHECK(of_type(p, "softmax").name == "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::Half, float, c10::Half>(c10::Half*, c10::Half const*, int)");
  // Without the warm-up cut the one slow first GEMM dominates.
  CHECK(recorded(0).kernels[0].calls == 11);
}

TEST_CASE("the printed table shows a kernel's name as text, never as the terminal's commands", "[profile]") {
  Profile p = recorded();
  p.kernels[0].name = "gemm\x1b]0;retitled\x07\x1b[2J";   // a profile file can say anything
  p.kernels[0].type = "matmul\x1b[31m";
  const std::string table = profile_table(p, 5);
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find('\x07') == std::string::npos);
  CHECK_THAT(table, Catch::Contains("gemm\\x1b]0;retitled"));
}

TEST_CASE("each kernel carries the NVTX range it ran in, and its shape can be read from it", "[profile]") {
  Profile p = recorded();
  CHECK_THAT(of_type(p, "softmax").nvtx, Catch::StartsWith("aten::_softmax"));
  CHECK(of_type(p, "flash_attention").nvtx.empty());
  CHECK(nvtx_first_shape("aten::_softmax, seq = 2, sizes = [[64, 12, 128, 128], [], []]") ==
        std::vector<long long>{64, 12, 128, 128});
  CHECK(nvtx_first_shape("aten::relu").empty());
  CHECK(nvtx_shapes("aten::addmm, seq = 3, sizes = [[3072], [8192, 768], [768, 3072], [], []]") ==
        std::vector<std::vector<long long>>{{3072}, {8192, 768}, {768, 3072}, {}, {}});
}

TEST_CASE("the Amdahl plan: per kernel 1/((1-f)+f/s), and the total", "[profile][plan]") {
  CHECK(amdahl(0.5, 2.0) == Approx(1 / 0.75));
  CHECK(amdahl(0.2, 1.0) == Approx(1.0));
  Profile p = recorded();
  Plan plan = make_plan(p, 10, 2.0);
  REQUIRE(plan.rows.size() == 5);
  const PlanRow& softmax = plan.rows[2];
  CHECK(softmax.kernel.type == "softmax");
  CHECK(softmax.supported);
  CHECK(softmax.s == 2.0);
  CHECK(softmax.gain == Approx(amdahl(120.0 / 870, 2.0)));
  CHECK(softmax.shape == std::vector<long long>{64 * 12 * 128, 128});
  // The GEMM's shape in matmul's terms [M, N, K, has_bias], from aten::mm's operands [M, K] and
  // [K, N] (no bias among them).
  CHECK(plan.rows[0].kernel.type == "matmul");
  CHECK(plan.rows[0].shape == std::vector<long long>{8192, 3072, 768, 0});
  // Every type but the GELU (an "other") is a type of this build: they halve, the GELU stays.
  double f_other = 0;
  for (auto& r : plan.rows)
    if (!r.supported) f_other += r.f;
  CHECK(f_other > 0);
  CHECK(plan.total_gain == Approx(1 / (f_other + (1 - f_other) / 2)));
  CHECK_THAT(plan_table(plan), Catch::Contains("softmax") && Catch::Contains("98304x128"));
}

TEST_CASE("the plan's whole step: where the GPU waited in the profile, each planned module's launches but one leave the CPU", "[profile][plan]") {
  Profile p;
  ProfiledKernel norm, gelu;
  norm.name = "module LlamaRMSNorm";
  norm.module = "LlamaRMSNorm";
  norm.type = "rmsnorm";
  norm.shape = {4096, 2048};
  norm.share = 0.2;
  norm.calls = 100;
  norm.cpu_us_per_call = 40;
  norm.launches_per_call = norm.range_launches_per_call = 5;
  gelu.name = "gelu_kernel";
  gelu.type = "other";
  gelu.share = 0.8;
  p.kernels = {gelu, norm};
  p.gpu_busy_us = 9000;
  p.gpu_span_us = 12000;  // the GPU idled a quarter of the window: it waited for the CPU
  Plan plan = make_plan(p, 10, 2.0);
  REQUIRE(plan.whole_step.whole_step);
  CHECK(plan.whole_step.kernel_time_speedup == Approx(1 / 0.9));
  // 4 of 5 launches of 40 µs go: 3200 µs of the CPU's 12000; the GPU 9000 -> 8100.
  CHECK(plan.whole_step.cpu_removed_us == Approx(3200));
  CHECK(plan.whole_step.speedup == Approx(12000 / 8800.0));
  CHECK_THAT(plan_table(plan), Catch::Contains("as a whole step") && Catch::Contains("1.364x") && Catch::Contains("CPU-bound after"));
  // The GPU never waited: what the CPU takes is unknown, kernel time only.
  p.gpu_span_us = 9100;
  plan = make_plan(p, 10, 2.0);
  CHECK_FALSE(plan.whole_step.whole_step);
  CHECK(plan.whole_step.speedup == Approx(1 / 0.9));
  CHECK_THAT(plan_table(plan), Catch::Contains("kernel time only (the GPU never waited"));
  // A profile from before the GPU's busy time was recorded.
  p.gpu_busy_us = p.gpu_span_us = -1;
  CHECK_THAT(make_plan(p, 10, 2.0).whole_step.why_not, Catch::Contains("no GPU busy time"));
}

TEST_CASE("an SDPA range plans flash_attention in its newest contract's terms, k's heads as the kv heads", "[profile][plan]") {
  Profile p = recorded();
  for (ProfiledKernel& k : p.kernels)
    if (k.type == "flash_attention")
      k.nvtx = "aten::scaled_dot_product_attention, seq = 4, sizes = [[2, 16, 2048, 128], [2, 4, 2048, 128], [2, 4, 2048, 128], [], []]";
  Plan plan = make_plan(p, 10, 2.0);
  bool found = false;
  for (const PlanRow& r : plan.rows)
    if (r.kernel.type == "flash_attention") {
      found = true;
      CHECK(r.shape == std::vector<long long>{2, 16, 4, 2048, 128, 1, 2});
      CHECK(r.shape.size() == find_spec("flash_attention")->shape_names.size());
    }
  CHECK(found);
}

TEST_CASE("the plan's [[kernel]] entries make a valid config, and unknown shapes are left to fill in", "[profile][plan]") {
  Profile p = recorded();
  // Make the layer norm a kernel of this build without a shape: rmsnorm, no NVTX.
  ProfiledKernel rms = p.kernels.back();
  rms.type = "rmsnorm";
  rms.nvtx.clear();
  p.kernels.push_back(rms);
  Plan plan = make_plan(p, 10, 2.0);
  std::string toml = plan_toml(plan, "profile.json");
  CHECK_THAT(toml, Catch::Contains("type = \"softmax\"\nshape = [98304, 128]"));
  CHECK_THAT(toml, Catch::Contains("dtype = \"fp16\""));
  CHECK_THAT(toml, Catch::Contains("baseline_us = 120.00"));
  CHECK_THAT(toml, Catch::Contains("# rmsnorm: shape unknown: the program emitted no NVTX range around it. Fill in shape, then uncomment."));
  CHECK_THAT(toml, Catch::Contains("# shape = [ROWS, COLS]"));
  auto cfg = parse_config("[run]\nname = \"planned\"\n" + toml, "planned.toml");
  REQUIRE(cfg.ok());
  // matmul, softmax and layernorm; the attention (no NVTX range) and the rmsnorm stay commented out.
  REQUIRE(cfg->kernels.size() == 3);
  CHECK(cfg->kernels[0].type == "matmul");
  CHECK(cfg->kernels[0].shape == Shape{8192, 3072, 768, 0});
  CHECK(cfg->kernels[1].weight == Approx(120.0 / 870).epsilon(1e-3));
  CHECK(*cfg->kernels[1].baseline_us == Approx(120));
  CHECK(cfg->kernels[2].type == "layernorm");
  CHECK(cfg->kernels[2].shape == Shape{8192, 768});
  CHECK_THAT(toml, Catch::Contains("# shape = [B, HQ, HKV, S, D, MASK, LAYOUT]"));
}

TEST_CASE("a kernel under half a percent of the GPU time is named but not planned for a run", "[profile][plan]") {
  Profile p = recorded();
  ProfiledKernel tiny = p.kernels.back();
  tiny.type = "reduce";
  tiny.nvtx = "aten::sum, seq = 9, sizes = [[1, 2], [], []]";
  tiny.share = 0.0004;
  p.kernels.push_back(tiny);
  std::string toml = plan_toml(make_plan(p, 10, 2.0), "profile.json");
  CHECK_THAT(toml, Catch::Contains("# reduce at 0.04% of the GPU time: left out (under 0.5%, not worth a run)"));
  CHECK_THAT(toml, !Catch::Contains("type = \"reduce\""));
}

TEST_CASE("profile.json survives the round trip, and another file is refused", "[profile]") {
  Profile p = recorded();
  p.command = {"python3", "model.py"};
  auto back = profile_from_json(nlohmann::json::parse(nlohmann::json(p).dump()));
  REQUIRE(back.ok());
  CHECK(back->kernels.size() == 5);
  CHECK(back->kernels[2].nvtx == p.kernels[2].nvtx);
  CHECK(back->command == p.command);
  CHECK_THAT(profile_from_json(nlohmann::json{{"kernels", 1}}).error().message, Catch::Contains("not an autokernel profile"));
}

TEST_CASE("plan on the command line prints the table and the entries, and --write appends them to a config", "[profile][cli]") {
  test::TempDir d;
  std::string prof = d.write("profile.json", nlohmann::json(recorded()).dump());
  auto r = test::run_autokernel("plan " + prof + " --top 5");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("whole program") && Catch::Contains("[[kernel]]"));
  std::string cfg = d.write("run.toml", "[run]\nname = \"planned\"\n");
  auto w = test::run_autokernel("plan " + prof + " --write " + cfg);
  CHECK(w.exit_code == 0);
  CHECK_THAT(w.out, Catch::Contains("it checks: 3 kernels"));
  CHECK(test::run_autokernel("plan /nonexistent.json").exit_code == 2);
}

namespace {
/// Text a profiled program (or an edited profile) may hold: a line break and a table of its own,
/// a terminal's escape, a byte that is not UTF-8, a DEL.
const std::string kHostile = "evil\n[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://attacker.example/v1\"\n"
                             "# \x1b]0;retitled\x07 \xff\x7f end";

/// The recorded profile with kHostile at the start of every kernel's name and NVTX range, and a
/// module row named with it.
Profile hostile_profile() {
  Profile p = recorded();
  for (auto& k : p.kernels) {
    k.name = kHostile + k.name;
    k.nvtx = kHostile + k.nvtx;
  }
  ProfiledKernel module = p.kernels.back();
  module.type = "rmsnorm";
  module.module = "LlamaRMSNorm" + kHostile;
  module.shape = {8192, 768};
  module.share = 0.01;
  p.kernels.push_back(module);
  return p;
}
}  // namespace

TEST_CASE("the plan's entries hold the profile's text as text: no name, range, module or dtype adds a key or a table", "[profile][plan]") {
  Profile p = hostile_profile();
  p.kernels.back().dtype = "fp16\"\n[llm]\nbase_url = \"http://attacker.example\"";
  const std::string text = plan_toml(make_plan(p, 10, 2.0), "profile\n[llm].json");
  toml::table t;
  REQUIRE_NOTHROW(t = toml::parse(text));
  CHECK_FALSE(t.contains("llm"));
  CHECK_THAT(text, !Catch::Contains("\n[llm]") && !Catch::Contains("\x1b"));
  REQUIRE(t["kernel"].as_array());
  const auto& last = *t["kernel"].as_array()->back().as_table();
  CHECK(last["dtype"].value<std::string>() == p.kernels.back().dtype);   // held exactly, as a string
}

TEST_CASE("plan --write of a profile with hostile names: the config parses with no [llm] table and checks", "[profile][plan][cli]") {
  test::TempDir d;
  const std::string prof = d.write("profile.json", json_dump(nlohmann::json(hostile_profile())));
  const std::string cfg = d.write("run.toml", "[run]\nname = \"planned\"\n");
  auto w = test::run_autokernel("plan " + prof + " --write " + cfg);
  INFO(w.out);
  CHECK(w.exit_code == 0);
  CHECK_THAT(w.out, Catch::Contains("it checks: 4 kernels"));
  toml::table t;
  REQUIRE_NOTHROW(t = toml::parse_file(cfg));
  CHECK_FALSE(t.contains("llm"));
  auto checked = test::run_autokernel("config check " + cfg);
  CHECK(checked.exit_code == 0);
  CHECK_THAT(checked.out, Catch::Contains("proposer: builtin"));
}

TEST_CASE("profile passes the program's exit code through and says when it ran no kernel", "[profile][cli]") {
  test::TempDir d;
  auto r = test::run_autokernel("profile --out " + (d.path / "p.json").string() + " -- sh -c 'echo from-the-program; exit 3'");
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.out, Catch::Contains("from-the-program") && Catch::Contains("no activity records"));
  auto ok = test::run_autokernel("profile --out " + (d.path / "p.json").string() + " -- true");
  CHECK(ok.exit_code == 1);
  CHECK(test::run_autokernel("profile").exit_code == 2);
}

namespace {
/// Starts the real binary with `args` as a process of its own, as a service manager would.
pid_t start_autokernel(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    std::vector<char*> argv{const_cast<char*>("autokernel")};
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string binary = test::autokernel_binary();
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

/// Waits at most `seconds` for `pid`; false when it is still running (then it is killed).
bool wait_at_most(pid_t pid, double seconds, int& status) {
  for (auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds); std::chrono::steady_clock::now() < end;) {
    if (waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return false;
}
}  // namespace

TEST_CASE("profile passes SIGTERM and SIGINT on to the program it runs and waits for it to end", "[profile][cli][signals]") {
  for (int sig : {SIGTERM, SIGINT}) {
    INFO("signal " << sig);
    test::TempDir d;
    const std::string ready = (d.path / "ready").string(), got = (d.path / "got").string();
    // The program records the signal it receives, and ends by itself after ten seconds at most.
    const std::string script = "trap 'echo TERM > " + got + "; exit 0' TERM; trap 'echo INT > " + got + "; exit 0' INT; "
                               "echo $$ > " + ready + ".tmp && mv " + ready + ".tmp " + ready + "; "
                               "i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done";
    pid_t ak = start_autokernel({"profile", "--out", (d.path / "p.json").string(), "--", "sh", "-c", script});
    REQUIRE(ak > 0);
    for (int i = 0; i < 500 && !std::filesystem::exists(ready); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(std::filesystem::exists(ready));
    const pid_t program = std::stoi(test::read_file(ready));
    kill(ak, sig);
    int status = 0;
    REQUIRE(wait_at_most(ak, 8, status));
    CHECK(WIFEXITED(status));   // not ended by the signal: it waited for the program
    CHECK(test::read_file(got) == (sig == SIGTERM ? "TERM\n" : "INT\n"));
    CHECK(kill(program, 0) == -1);   // the program has ended and was reaped before autokernel left
  }
}

TEST_CASE("real records of one llama_block step on the H100: ranked, classified, shapes from NVTX", "[profile][plan]") {
  // tests/data/llama_block_step.records.jsonl: the last forward step of examples/models/llama_block.py
  // as libautokernel_inject.so recorded it on the H100 (kernels, launch calls, PyTorch's NVTX ranges).
  auto records = read_records(AK_SOURCE_DIR "/tests/data/llama_block_step.records.jsonl");
  REQUIRE(records.ok());
  auto p = build_profile(*records, 0);
  REQUIRE(p.ok());
  CHECK(p->gpu == "NVIDIA H100 80GB HBM3");
  REQUIRE(p->kernels.size() == 11);
  CHECK(p->kernels[0].type == "matmul");
  CHECK(p->kernels[0].share == Approx(0.413).margin(0.005));
  CHECK_THAT(p->kernels[0].nvtx, Catch::StartsWith("aten::mm"));
  const ProfiledKernel& rms = of_type(*p, "rmsnorm");
  CHECK(rms.calls == 16);   // two per block, eight blocks
  CHECK_THAT(rms.nvtx, Catch::StartsWith("aten::_fused_rms_norm"));
  Plan plan = make_plan(*p, 12, 2.0);
  std::string toml = plan_toml(plan, "llama.json");
  CHECK_THAT(toml, Catch::Contains("type = \"rmsnorm\"\nshape = [8192, 2048]"));
  auto cfg = parse_config("[run]\nname = \"llama\"\n" + toml, "llama.toml");
  REQUIRE(cfg.ok());
  CHECK(cfg->kernels.at(0).type == "matmul");
  CHECK(cfg->kernels.at(0).shape == Shape{8192, 2048, 5632, 0});  // aten::mm [8192, 5632] x [5632, 2048]
  bool rms_planned = false;
  for (auto& k : cfg->kernels) rms_planned |= k.type == "rmsnorm" && k.shape == Shape{8192, 2048};
  CHECK(rms_planned);
}
