#include "daemon/verify/model_agreement.hpp"

#include <cmath>
#include <map>

#include "common/format.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

double error_floor(const std::string& dtype) {
  if (dtype == "fp16") return 2 * std::ldexp(1.0, -11);
  if (dtype == "bf16") return 2 * std::ldexp(1.0, -8);
  return 2 * std::ldexp(1.0, -24);
}

Agreement judge_outputs(const OutputError& eager, const OutputError& ours, const std::string& dtype) {
  Agreement a;
  a.allowed = std::max(2 * eager.rel_l2, error_floor(dtype));
  if (!ours.finite) {
    a.why = "the output with the exported ops is not finite (NaN or inf)";
    return a;
  }
  a.agrees = ours.rel_l2 <= a.allowed;
  a.why = format_numbers("relative L2 error %.3g against fp32, ", ours.rel_l2) +
          (a.agrees ? "within " : "over ") + format_numbers("%.3g", a.allowed) +
          format_numbers(" (twice the model's own %.3g in ", eager.rel_l2) + dtype + ", or the dtype's floor)";
  return a;
}

OutputError output_error(const nlohmann::json& j) {
  auto num = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : INFINITY; };
  return {num("rel_l2"), num("max_abs"), j.value("finite", false)};
}

ModelAgreement judge_report(const nlohmann::json& report, const std::string& dtype) {
  ModelAgreement v;
  auto say = [&](const std::string& what, bool agrees, const std::string& why) {
    v.agrees = v.agrees && agrees;
    v.lines.push_back(what + (agrees ? "agree: " : "DISAGREE: ") + why);
  };
  v.eager = judge_outputs(output_error(report["eager"]), output_error(report["autokernel"]), dtype);
  say("outputs: ", v.eager.agrees, v.eager.why);
  if (report.contains("autokernel_graph")) {
    const auto& g = report["autokernel_graph"];
    const bool baseline_captured = report.contains("graph") && !report["graph"].contains("error");
    if (g.contains("error") && baseline_captured)
      say("CUDA graph outputs: ", false, "the step with the ops does not capture (" + g.value("error", std::string()) +
                                             ") while the step without them does");
    else if (!g.contains("error")) {
      const Agreement a = judge_outputs(output_error(report["eager"]), output_error(g), dtype);
      say("CUDA graph outputs: ", a.agrees, a.why);
    }
  }
  if (report.contains("autokernel_capture")) {
    const auto& g = report["autokernel_capture"];
    const bool baseline_captured = report.contains("capture") && !report["capture"].contains("error");
    if (g.contains("error") && baseline_captured)
      say("capture() outputs: ", false, "the step with the ops does not capture (" + g.value("error", std::string()) +
                                            ") while the step without them does");
    else if (!g.contains("error")) {
      const Agreement a = judge_outputs(output_error(report["eager"]), output_error(g), dtype);
      say("capture() outputs: ", a.agrees, a.why);
    }
  }
  if (report.contains("autokernel_compile") && report.contains("compile") &&
      !report["autokernel_compile"].value("ops", nlohmann::json::array()).empty()) {
    const Agreement a = judge_outputs(output_error(report["compile"]), output_error(report["autokernel_compile"]), dtype);
    say("torch.compile outputs: ", a.agrees, a.why);
  }
  // Liger's patch is judged by the same rule, and said, but is not this package's: it never makes
  // verify fail.
  if (report.contains("liger") && !report["liger"].contains("error")) {
    const Agreement a = judge_outputs(output_error(report["eager"]), output_error(report["liger"]), dtype);
    v.lines.push_back(std::string("Liger-Kernel's outputs (not judged for the verdict): ") + (a.agrees ? "agree: " : "DISAGREE: ") + a.why);
  }
  return v;
}

std::vector<PredictedPart> prediction_parts(const Profile& profile, const nlohmann::json& manifest, const nlohmann::json& served) {
  std::vector<PredictedPart> parts;
  for (auto& op : manifest.value("ops", nlohmann::json::array())) {
    const std::string type = op.value("type", "");
    const double share = served.is_object() && served.contains(type) && served[type].is_number() ? served[type].get<double>() : 1.0;
    const nlohmann::json files = op.contains("files") && op["files"].is_array() && !op["files"].empty() ? op["files"] : nlohmann::json::array({op});
    // A profile row without a shape goes to the type's first file only: counted once.
    bool first = true;
    for (auto& file : files) {
      const double s = file.value("speedup", 0.0);
      PredictedPart part{type, file.value("shape", ""), 0, s, share};
      for (auto& k : profile.kernels) {
        if (k.type != part.type) continue;
        const std::string shape = k.shape.empty() ? "" : shape_str(Shape(k.shape.begin(), k.shape.end()));
        if ((shape.empty() && first) || (!shape.empty() && shape == part.shape)) part.f += k.share;
      }
      first = false;
      part.f *= share;
      if (s > 0 && part.f > 0) parts.push_back(part);
    }
  }
  return parts;
}

nlohmann::json served_shares(const nlohmann::json& report) {
  if (report.contains("served") && report["served"].is_object() && report["served"].contains("by_type") &&
      report["served"]["by_type"].is_object())
    return report["served"]["by_type"];
  return nlohmann::json::object();
}

StepTimes eager_step_times(const nlohmann::json& report) {
  StepTimes t;
  if (!report.contains("gpu_idle") || !report["gpu_idle"].is_object()) return t;
  const auto& eager = report["gpu_idle"].value("eager", nlohmann::json::object());
  auto num = [](const nlohmann::json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; };
  t.gpu_busy_us = num(eager, "busy_us");
  t.cpu_issue_us = num(eager, "host_us");
  t.step_us = report.contains("eager") ? num(report["eager"], "median_ms") * 1000 : 0.0;
  return t;
}

namespace {

/// The kernels one call of a class's forward (or a function) launched in the profile: the module
/// rows whose module is the class `target` names ("pkg.mod.Qwen3RMSNorm.forward", "pkg.mod.fn"),
/// weighted by their calls; -1 where the profile has none or did not count them.
double launches_per_call(const Profile& profile, const std::string& target) {
  double launches = 0, calls = 0;
  for (auto& k : profile.kernels) {
    if (k.module.empty() || k.launches_per_call < 0 || k.calls <= 0) continue;
    const std::string dotted = "." + k.module;
    const bool named = target.size() > dotted.size() &&
                       (target.compare(target.size() - dotted.size(), dotted.size(), dotted) == 0 ||
                        target.find(dotted + ".forward") != std::string::npos);
    if (!named) continue;
    launches += k.launches_per_call * double(k.calls);
    calls += double(k.calls);
  }
  return calls > 0 ? launches / calls : -1;
}

double number(const nlohmann::json& j, const char* key, double otherwise) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : otherwise;
}

}  // namespace

Result<std::vector<CpuPart>> cpu_parts(const nlohmann::json& report, const Profile& profile) {
  std::vector<CpuPart> parts;
  std::map<std::string, double> calls_in_step;
  if (report.contains("served") && report["served"].is_object())
    for (auto& row : report["served"].value("calls", nlohmann::json::array())) calls_in_step[row.value("name", "")] = number(row, "calls", 0);
  for (auto& row : report["cpu_cost"].value("calls", nlohmann::json::array())) {
    CpuPart c;
    c.name = row.value("name", "");
    c.type = row.value("type", "");
    c.launches_per_call = launches_per_call(profile, c.name);
    if (row.contains("us_per_step") && row.contains("original_us_per_step")) {
      c.calls_per_step = number(row, "calls_per_step", 0);
      c.op_us_per_step = number(row, "us_per_step", 0);
      c.original_us_per_step = number(row, "original_us_per_step", 0);
    } else if (calls_in_step.count(c.name)) {
      c.calls_per_step = calls_in_step[c.name];
      c.op_us_per_step = c.calls_per_step * number(row, "us_per_call", 0);
      c.original_us_per_step = c.calls_per_step * number(row, "original_us_per_call", 0);
    } else {
      return error("the report gives no time in a step for " + c.name + " (neither cpu_cost's us_per_step nor its calls in served)");
    }
    parts.push_back(c);
  }
  return parts;
}

StepPrediction predict_run(const Profile& profile, const nlohmann::json& manifest, const nlohmann::json& report) {
  const auto gpu = prediction_parts(profile, manifest, served_shares(report));
  if (!report.contains("cpu_cost") || !report["cpu_cost"].is_object() || !report["cpu_cost"].contains("calls"))
    return kernel_time_prediction(gpu, "the run measured no CPU time of the replaced functions");
  const StepTimes before = eager_step_times(report);
  if (before.gpu_busy_us <= 0 || before.cpu_issue_us <= 0)
    return kernel_time_prediction(gpu, "the run measured no GPU busy time or CPU issue time of the step without the ops "
                                       "(the runner run with --profile-steps 0, or a trace without kernels)");
  auto cpu = cpu_parts(report, profile);
  if (!cpu) return kernel_time_prediction(gpu, cpu.error().message);
  return predict_step(gpu, before, *cpu);
}

}  // namespace ak
