// autokernel verify: a model with and without the exported ops; exit 1 when the outputs disagree.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"
#include "common/format.hpp"
#include "common/result.hpp"
#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/commands/foreground_command.hpp"
#include "daemon/verify/verify_report.hpp"
#include "daemon/verify/model_agreement.hpp"

namespace ak {
namespace fs = std::filesystem;
namespace {

/// Runs the package's runner (python -m autokernel_ops.verify) with the package first on PYTHONPATH.
int run_runner(const std::string& python, const std::string& ops_dir, const std::vector<std::string>& runner_args) {
  std::vector<std::string> cmd{python, "-m", "autokernel_ops.verify"};
  cmd.insert(cmd.end(), runner_args.begin(), runner_args.end());
  return run_foreground(cmd, {{"PYTHONPATH", ops_dir}}, "verify");
}

/// The folder whose autokernel_ops/ verify imports: `ops` itself for the torch layout (and for one
/// built variant of an hf-kernels export, build/<variant>/), or the one variant an hf-kernels export
/// built (`ops`/build/<variant>/). An Error saying what to give instead otherwise.
Result<std::string> package_root(const std::string& ops) {
  std::error_code ec;
  if (fs::is_regular_file(fs::path(ops) / "autokernel_ops" / "manifest.json", ec)) return ops;
  if (!fs::is_regular_file(fs::path(ops) / "build.toml", ec))
    return error(ops + " is not a package autokernel export wrote (no " + ops + "/autokernel_ops/manifest.json)");
  std::vector<std::string> variants;
  for (auto it = fs::directory_iterator(fs::path(ops) / "build", ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (fs::is_regular_file(it->path() / "autokernel_ops" / "manifest.json")) variants.push_back(it->path().string());
  if (variants.empty())
    return error(ops + " is an hf-kernels export without a built variant (no build/<variant>/autokernel_ops/): build one "
               "there with `python3 " + ops + "/build_variant.py`, or export again without --source-only");
  if (variants.size() > 1) {
    std::string names;
    for (auto& v : variants) names += (names.empty() ? "" : ", ") + fs::path(v).filename().string();
    return error(ops + " holds several built variants (" + names + "): give --ops " + ops +
                 "/build/<variant>, the one of the PyTorch that runs the model");
  }
  return variants.front();
}

}  // namespace

int verify_command(const Args& args) {
  std::string model, ops, dtype = "fp16", steps = "30", profile_path, out, python = "python3", compile_mode;
  bool compile = false, no_max_autotune = false, cuda_graphs = false, liger = false;
  ArgParser p("autokernel verify --model FILE.py --ops DIR [--dtype fp16|bf16] [--steps N] [--compile [--compile-mode M] "
              "[--no-max-autotune]] [--cuda-graphs] [--liger] [--profile P.json]",
              "Runs a model with and without the ops of an exported package (autokernel export), compares both\n"
              "outputs with the model's own fp32 output, and times both (CUDA events, warm-up, median of N steps).\n"
              "The outputs agree when the error with the ops is at most twice the model's own in that dtype (or\n"
              "the dtype's floor). Prints the end-to-end speedup and, with --profile (the profile the run was\n"
              "planned from), the one the Amdahl plan predicts from the kernels' speedups and shares. Exits 1\n"
              "when the outputs disagree. Also measures the CPU time of one call of each replacement and the GPU's\n"
              "idle time per step the ops add. --compile times each torch.compile mode and decides, on the whole\n"
              "compiled step, which ops run under it. --cuda-graphs also times the step as CUDA graphs, and as\n"
              "autokernel_ops.capture runs it; --liger, Liger-Kernel's patch for the model's family. Counts, per\n"
              "replaced function, the calls an op served and which exported file served them. FILE.py defines build(dtype) -> (model, inputs): see docs/export.md.");
  p.option("model", "FILE.py", "the model file", &model)
      .option("ops", "DIR", "the package autokernel export wrote (the torch layout, or an hf-kernels export with its built variant)", &ops)
      .option("dtype", "fp16|bf16", "the dtype of the run (default fp16)", &dtype)
      .option("steps", "N", "timed steps (default 30)", &steps)
      .flag("compile", "also time torch.compile of the model in each mode, and decide which ops run under it", &compile)
      .option("compile-mode", "MODE", "time this torch.compile mode only (default: default, max-autotune-no-cudagraphs, "
              "reduce-overhead)", &compile_mode)
      .flag("no-max-autotune", "leave out max-autotune-no-cudagraphs (slow to compile)", &no_max_autotune)
      .flag("cuda-graphs", "also time one step replayed as a CUDA graph, without and with the ops, and as "
            "autokernel_ops.capture runs it", &cuda_graphs)
      .flag("liger", "also time Liger-Kernel's patch for the model's family (a row that says why not where it is not installed)", &liger)
      .option("profile", "P.json", "the profile the run was planned from: predict the speedup", &profile_path)
      .option("out", "FILE", "also write the report as JSON", &out)
      .option("python", "PATH", "the Python with PyTorch (default python3)", &python);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (model.empty() || ops.empty()) return std::fprintf(stderr, "autokernel verify: give --model FILE.py and --ops DIR\n"), kExitUsage;
  if (dtype != "fp16" && dtype != "bf16") return std::fprintf(stderr, "autokernel verify: --dtype %s: expected fp16 or bf16\n", dtype.c_str()), kExitUsage;
  auto root = package_root(ops);
  if (!root) return std::fprintf(stderr, "autokernel verify: %s\n", root.error().message.c_str()), kExitUsage;
  ops = *root;
  const std::string manifest_path = ops + "/autokernel_ops/manifest.json";
  auto manifest_text = read_file_text(manifest_path);
  if (!manifest_text)
    return std::fprintf(stderr, "autokernel verify: %s is not a package autokernel export wrote (no %s)\n", ops.c_str(),
                        manifest_path.c_str()), kExitUsage;
  const auto manifest = nlohmann::json::parse(*manifest_text, nullptr, false);
  Profile profile;
  if (!profile_path.empty()) {
    auto parsed = read_profile(profile_path);
    if (!parsed) return std::fprintf(stderr, "autokernel verify: --profile %s\n", parsed.error().message.c_str()), kExitUsage;
    profile = *parsed;
  }
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);   // fails where TMPDIR names no folder
  if (ec) return std::fprintf(stderr, "autokernel verify: no folder for temporary files: %s (is TMPDIR a folder?)\n", ec.message().c_str()), kExitUsage;
  const std::string report_path = tmp.string() + "/autokernel-verify-" + std::to_string(getpid()) + ".json";
  std::vector<std::string> runner{"--model", fs::absolute(model).string(), "--json", report_path, "--dtype", dtype, "--steps", steps};
  if (compile) runner.push_back("--compile");
  if (!compile_mode.empty()) runner.insert(runner.end(), {"--compile-mode", compile_mode});
  if (no_max_autotune) runner.push_back("--no-max-autotune");
  if (cuda_graphs) runner.push_back("--cuda-graphs");
  if (liger) runner.push_back("--liger");
  if (int rc = run_runner(python, fs::absolute(ops).string(), runner); rc != 0)
    return std::fprintf(stderr, "autokernel verify: the model run failed (exit %d): its output is above\n", rc), kExitFailure;
  auto text = read_file_text(report_path);
  auto report = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (report.is_discarded() || !report.contains("eager") || !report.contains("autokernel"))
    return std::fprintf(stderr, "autokernel verify: %s: no report from the model run\n", report_path.c_str()), kExitFailure;
  std::remove(report_path.c_str());  // what it held goes into --out, with the verdict

  const ModelAgreement judged = judge_report(report, dtype);
  const Agreement& agreement = judged.eager;
  const double eager_ms = report["eager"].value("median_ms", 0.0), ours_ms = report["autokernel"].value("median_ms", 0.0);
  const double measured = ours_ms > 0 ? eager_ms / ours_ms : 0;
  std::string text_out = "model " + model + " (" + dtype + ", " + report.value("gpu", std::string("?")) + ", PyTorch " +
                         report.value("torch", std::string("?")) + ")\npatched:\n";
  for (auto& n : report.value("patched", std::vector<std::string>{})) text_out += "  " + n + "\n";
  text_out += timing_table(report) + served_text(report) + op_cost_text(report) + compile_decision_text(report);
  for (auto& line : judged.lines) text_out += line + "\n";
  text_out += format_numbers("end-to-end speedup with the ops: %.3fx", measured);
  if (report.contains("compile") && report["compile"].value("median_ms", 0.0) > 0 && ours_ms > 0)
    text_out += format_numbers(" (eager with the ops against the best torch.compile: %.3fx)", report["compile"].value("median_ms", 0.0) / ours_ms);
  report["verdict"] = {{"agrees", judged.agrees}, {"allowed_rel_l2", agreement.allowed}, {"why", agreement.why},
                       {"judgements", judged.lines}, {"speedup", measured}};
  if (!profile.kernels.empty()) {
    const StepPrediction predicted = predict_run(profile, manifest, report);
    text_out += "\n" + step_prediction_text(predicted);
    // predicted_speedup stays the kernel-time Amdahl, as before; the whole step's beside it.
    report["verdict"]["predicted_speedup"] = predicted.kernel_time_speedup;
    report["verdict"]["predicted_speedup_whole_step"] = predicted.speedup;
    report["verdict"]["prediction"] = step_prediction_json(predicted);
    report["verdict"]["prediction_parts"] = report["verdict"]["prediction"]["gpu_parts"];
  }
  if (text_out.back() == '\n') text_out.pop_back();
  std::printf("%s\n", text_out.c_str());
  if (!out.empty())
    if (auto s = write_file_atomic(out, report.dump(2) + "\n"); !s)
      std::fprintf(stderr, "autokernel verify: %s\n", s.error().message.c_str());
  return judged.agrees ? kExitOk : kExitFailure;
}

}  // namespace ak
