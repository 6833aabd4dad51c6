// autokernel verify's verdict: the output tolerance, the Amdahl prediction, and the command's exit
// code on a model run (a stand-in runner that writes the report a real one would).
#include <catch2/catch.hpp>

#include "daemon/verify/model_agreement.hpp"
#include "tests/support.hpp"

using namespace ak;

TEST_CASE("the ops agree within twice the model's own error in its dtype, and never when not finite", "[verify]") {
  const OutputError eager{3e-3, 0.05, true};
  CHECK(judge_outputs(eager, {5e-3, 0.06, true}, "fp16").agrees);
  CHECK(judge_outputs(eager, {6e-3, 0.06, true}, "fp16").agrees);
  auto off = judge_outputs(eager, {7e-3, 0.5, true}, "fp16");
  CHECK_FALSE(off.agrees);
  CHECK(off.allowed == Approx(6e-3));
  CHECK_THAT(off.why, Catch::Contains("over"));
  CHECK_FALSE(judge_outputs(eager, {0, 0, false}, "fp16").agrees);
}

TEST_CASE("a model whose own error is near zero is held to the dtype's floor", "[verify]") {
  const OutputError exact{1e-7, 1e-6, true};
  CHECK(error_floor("fp16") == Approx(9.765625e-4));
  CHECK(error_floor("bf16") == Approx(7.8125e-3));
  CHECK(judge_outputs(exact, {9e-4, 0, true}, "fp16").agrees);
  CHECK_FALSE(judge_outputs(exact, {2e-3, 0, true}, "fp16").agrees);
  CHECK(judge_outputs(exact, {2e-3, 0, true}, "bf16").agrees);
}

TEST_CASE("the prediction adds up the profile's share of each exported type at its shape", "[verify]") {
  Profile p;
  ProfiledKernel norm, norm_other_shape, norm_kernel, rope, gemm;
  norm.type = norm_other_shape.type = norm_kernel.type = "rmsnorm";
  norm.shape = {4096, 2048};
  norm.share = 0.10;
  norm_other_shape.shape = {8, 2048};
  norm_other_shape.share = 0.01;
  norm_kernel.share = 0.02;  // a kernel row with no shape: of the type, counted
  rope.type = "rotary_embedding";
  rope.shape = {2, 16, 2048, 128};
  rope.share = 0.12;
  gemm.type = "matmul";
  gemm.share = 0.5;
  p.kernels = {norm, norm_other_shape, norm_kernel, rope, gemm};
  auto manifest = nlohmann::json::parse(R"({"ops": [
      {"type": "rmsnorm", "shape": "4096x2048", "speedup": 4.0},
      {"type": "rotary_embedding", "shape": "2x16x2048x128", "speedup": 3.0},
      {"type": "softmax", "shape": "8x8", "speedup": 2.0},
      {"type": "layernorm", "shape": "", "speedup": 0}]})");
  auto parts = prediction_parts(p, manifest);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].f == Approx(0.12));
  CHECK(parts[0].s == 4.0);
  CHECK(parts[1].f == Approx(0.12));
  CHECK(predicted_speedup(parts) == Approx(1 / ((1 - 0.24) + 0.12 / 4 + 0.12 / 3)));
  CHECK(predicted_speedup({}) == 1.0);
}

TEST_CASE("the prediction counts each exported file at its own shape, and only the share of calls the op served", "[verify]") {
  Profile p;
  ProfiledKernel decoder, q_norm, k_norm, shapeless;
  decoder.type = q_norm.type = k_norm.type = shapeless.type = "rmsnorm";
  decoder.shape = {4096, 2048};
  decoder.share = 0.10;
  q_norm.shape = {65536, 128};
  q_norm.share = 0.06;
  k_norm.shape = {16384, 128};  // tuned by no file: no part
  k_norm.share = 0.02;
  shapeless.share = 0.01;  // a kernel row with no shape: counted once, with the first file
  p.kernels = {decoder, q_norm, k_norm, shapeless};
  auto manifest = nlohmann::json::parse(R"({"ops": [{"type": "rmsnorm", "shape": "4096x2048", "speedup": 4.0, "files": [
      {"shape": "4096x2048", "speedup": 4.0}, {"shape": "65536x128", "speedup": 2.0}]}]})");
  auto parts = prediction_parts(p, manifest);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].f == Approx(0.11));
  CHECK(parts[1].shape == "65536x128");
  CHECK(parts[1].f == Approx(0.06));
  CHECK(parts[1].s == 2.0);
  // Half the calls served: half the share gains.
  auto served = prediction_parts(p, manifest, nlohmann::json::parse(R"({"rmsnorm": 0.5})"));
  REQUIRE(served.size() == 2);
  CHECK(served[0].f == Approx(0.055));
  CHECK(served[0].served == 0.5);
  CHECK(prediction_parts(p, manifest, nlohmann::json::parse(R"({"rmsnorm": 0})")).empty());
  CHECK(served_shares(nlohmann::json::parse(R"({"served": {"by_type": {"rmsnorm": 0.5}}})")) == nlohmann::json::parse(R"({"rmsnorm": 0.5})"));
  CHECK(served_shares(nlohmann::json::object()).empty());
}

namespace {
/// A report of a CPU-bound run: eager issues in 13.1 ms, its kernels take 9.7 ms; the norm's
/// replacement takes 1.1 ms of CPU a step where the original took 6 ms; half its calls served.
nlohmann::json cpu_bound_report(bool per_step) {
  auto r = nlohmann::json::parse(R"({
    "eager": {"median_ms": 13.56}, "autokernel": {"median_ms": 8.5},
    "served": {"calls": [{"name": "m.Qwen3RMSNorm.forward", "type": "rmsnorm", "calls": 34, "served": 17, "share": 0.5}],
               "by_type": {"rmsnorm": 0.5}},
    "cpu_cost": {"calls": [{"name": "m.Qwen3RMSNorm.forward", "type": "rmsnorm", "us_per_call": 32.35, "original_us_per_call": 176.47}]},
    "gpu_idle": {"eager": {"busy_us": 9700, "host_us": 13100, "step_us": 13560}}})");
  if (per_step) {
    auto& row = r["cpu_cost"]["calls"][0];
    row["us_per_step"] = 1100.0;
    row["original_us_per_step"] = 6000.0;
    row["calls_per_step"] = 34.0;
  }
  return r;
}
Profile norm_profile(bool with_cpu) {
  Profile p;
  ProfiledKernel norm;
  norm.type = "rmsnorm";
  norm.module = "Qwen3RMSNorm";
  norm.shape = {4096, 2048};
  norm.share = 0.6;
  norm.calls = 340;
  if (with_cpu) norm.launches_per_call = 6, norm.cpu_us_per_call = 190;
  p.kernels = {norm};
  return p;
}
const char* kNormManifest = R"({"ops": [{"type": "rmsnorm", "shape": "4096x2048", "speedup": 3.0}]})";
}  // namespace

TEST_CASE("a run's prediction counts the CPU time each replaced function removed, and the GPU's only for calls served", "[verify][prediction]") {
  const auto p = predict_run(norm_profile(true), nlohmann::json::parse(kNormManifest), cpu_bound_report(true));
  REQUIRE(p.whole_step);
  // Half the calls served: f = 0.3 on the GPU.
  REQUIRE(p.gpu_parts.size() == 1);
  CHECK(p.gpu_parts[0].f == Approx(0.3));
  CHECK(p.kernel_time_speedup == Approx(1.25));
  REQUIRE(p.cpu_parts.size() == 1);
  CHECK(p.cpu_parts[0].removed_us() == Approx(4900));
  CHECK(p.cpu_parts[0].launches_per_call == Approx(6));  // the profile's row of the same class
  CHECK(p.before.cpu_issue_us == 13100);
  CHECK(p.speedup == Approx(13560 / (8200 + 460.0)));
}

TEST_CASE("a run that timed calls but not steps prices them by its calls in a step", "[verify][prediction]") {
  const auto p = predict_run(norm_profile(false), nlohmann::json::parse(kNormManifest), cpu_bound_report(false));
  REQUIRE(p.whole_step);
  REQUIRE(p.cpu_parts.size() == 1);
  CHECK(p.cpu_parts[0].calls_per_step == 34);
  CHECK(p.cpu_parts[0].original_us_per_step == Approx(6000).epsilon(1e-3));
  CHECK(p.cpu_parts[0].op_us_per_step == Approx(1100).epsilon(1e-3));
  CHECK(p.cpu_parts[0].launches_per_call == -1);  // a profile from before they were counted
}

TEST_CASE("a run without the step's CPU and GPU times, or a function it did not price, predicts from kernel time only", "[verify][prediction]") {
  auto report = cpu_bound_report(false);
  report.erase("gpu_idle");
  auto p = predict_run(norm_profile(true), nlohmann::json::parse(kNormManifest), report);
  CHECK_FALSE(p.whole_step);
  CHECK(p.speedup == Approx(1.25));
  CHECK_THAT(p.why_not, Catch::Contains("no GPU busy time or CPU issue time"));
  report = cpu_bound_report(false);
  report.erase("served");
  p = predict_run(norm_profile(true), nlohmann::json::parse(kNormManifest), report);
  CHECK_FALSE(p.whole_step);
  CHECK_THAT(p.why_not, Catch::Contains("m.Qwen3RMSNorm.forward"));
  report.erase("cpu_cost");
  CHECK_THAT(predict_run(norm_profile(true), nlohmann::json::parse(kNormManifest), report).why_not,
             Catch::Contains("no CPU time of the replaced functions"));
}

namespace {
/// A package folder with a manifest, and a stand-in for python that writes `report` where the
/// runner is told to.
std::string fake_python(const test::TempDir& dir, const std::string& report) {
  std::filesystem::create_directories(dir.path / "ops/autokernel_ops");
  dir.write("ops/autokernel_ops/manifest.json", R"({"schema": "autokernel-export-1", "ops": [{"type": "rmsnorm", "shape": "4096x2048", "speedup": 4.0}]})");
  dir.write("report.json", report);
  const std::string script = dir.write("python",
      "#!/bin/sh\n# the arguments autokernel verify gives: -m autokernel_ops.verify --model M --json OUT ...\n"
      "while [ $# -gt 0 ]; do if [ \"$1\" = --json ]; then cp " + (dir.path / "report.json").string() + " \"$2\"; fi; shift; done\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  return script;
}
const char* kReport = R"({"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11", "patched": ["torch.nn.functional.rms_norm -> autokernel::rmsnorm"],
  "eager": {"rel_l2": 0.003, "max_abs": 0.1, "finite": true, "median_ms": 13.0, "min_ms": 12.9, "max_ms": 13.2},
  "autokernel": {"rel_l2": %s, "max_abs": 0.1, "finite": true, "median_ms": 10.0, "min_ms": 9.9, "max_ms": 10.3}})";
std::string report_with(const char* rel_l2) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, kReport, rel_l2);
  return buf;
}
}  // namespace

TEST_CASE("verify prints the end-to-end speedup beside the prediction and exits 0 when the outputs agree", "[verify]") {
  test::TempDir dir;
  const std::string python = fake_python(dir, report_with("0.004"));
  dir.write("profile.json", R"({"schema": "autokernel-profile-1", "total_gpu_us": 100, "kernels": [
      {"name": "module LlamaRMSNorm", "type": "rmsnorm", "calls": 16, "total_us": 20, "mean_us": 1.25, "share": 0.2,
       "module": "LlamaRMSNorm", "shape": [4096, 2048]}]})");
  auto r = test::run_autokernel("verify --model m.py --ops " + (dir.path / "ops").string() + " --python " + python +
                                " --profile " + (dir.path / "profile.json").string() + " --out " + (dir.path / "v.json").string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("outputs: agree"));
  CHECK_THAT(r.out, Catch::Contains("end-to-end speedup with the ops: 1.300x"));
  CHECK_THAT(r.out, Catch::Contains("the Amdahl plan predicted 1.176x"));  // 1 / (0.8 + 0.2 / 4)
  CHECK_THAT(r.out, Catch::Contains("torch.nn.functional.rms_norm -> autokernel::rmsnorm"));
  auto v = nlohmann::json::parse(test::read_file((dir.path / "v.json").string()));
  CHECK(v["verdict"]["agrees"] == true);
  CHECK(v["verdict"]["predicted_speedup"].get<double>() == Approx(1 / 0.85));
}

TEST_CASE("verify prints the whole step's prediction, which worker bounds it and what each part removed, and writes both", "[verify][prediction]") {
  test::TempDir dir;
  auto report = nlohmann::json::parse(report_with("0.004"));
  report["gpu_idle"] = {{"eager", {{"busy_us", 9000.0}, {"host_us", 12500.0}, {"step_us", 13000.0}}}};
  report["cpu_cost"] = nlohmann::json::parse(R"({"calls": [{"name": "m.LlamaRMSNorm.forward", "type": "rmsnorm",
      "us_per_call": 20, "original_us_per_call": 120, "us_per_step": 640, "original_us_per_step": 3840, "calls_per_step": 32}]})");
  const std::string python = fake_python(dir, report.dump());
  dir.write("profile.json", R"({"schema": "autokernel-profile-1", "total_gpu_us": 100, "kernels": [
      {"name": "module LlamaRMSNorm", "type": "rmsnorm", "calls": 16, "total_us": 20, "mean_us": 1.25, "share": 0.2,
       "module": "LlamaRMSNorm", "shape": [4096, 2048], "cpu_us_per_call": 150, "launches_per_call": 6}]})");
  auto r = test::run_autokernel("verify --model m.py --ops " + (dir.path / "ops").string() + " --python " + python +
                                " --profile " + (dir.path / "profile.json").string() + " --out " + (dir.path / "v.json").string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("the Amdahl plan predicted 1.176x"));
  // GPU 9000 / 1.176 = 7650; CPU 12500 - 3200 = 9300, the slower; 500 µs overlap neither: 13000 / 9800.
  CHECK_THAT(r.out, Catch::Contains("predicted 1.327x"));
  CHECK_THAT(r.out, Catch::Contains("without the ops, measured CPU-bound"));
  CHECK_THAT(r.out, Catch::Contains("the original launched 6.0 kernels a call"));
  auto v = nlohmann::json::parse(test::read_file((dir.path / "v.json").string()));
  CHECK(v["verdict"]["predicted_speedup"].get<double>() == Approx(1 / 0.85));
  CHECK(v["verdict"]["predicted_speedup_whole_step"].get<double>() == Approx(13000 / 9800.0));
  CHECK(v["verdict"]["prediction"]["after"]["bound"] == "CPU");
  CHECK(v["verdict"]["prediction"]["cpu_removed_us"].get<double>() == Approx(3200));
}

TEST_CASE("verify exits 1 when the outputs with the ops are off the model's", "[verify]") {
  test::TempDir dir;
  const std::string python = fake_python(dir, report_with("0.02"));
  auto r = test::run_autokernel("verify --model m.py --ops " + (dir.path / "ops").string() + " --python " + python);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("outputs: DISAGREE"));
}

TEST_CASE("verify says so when the folder is not an exported package or the model run fails", "[verify]") {
  test::TempDir dir;
  auto r = test::run_autokernel("verify --model m.py --ops " + dir.path.string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("is not a package autokernel export wrote"));
  const std::string python = fake_python(dir, "{}");
  auto broken = test::run_autokernel("verify --model m.py --ops " + (dir.path / "ops").string() + " --python " + python);
  CHECK(broken.exit_code == 1);
  CHECK_THAT(broken.out, Catch::Contains("no report from the model run"));
}
