#include "daemon/verify/verify_verdict.hpp"

#include <cmath>

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

ReportVerdict judge_report(const nlohmann::json& report, const std::string& dtype) {
  ReportVerdict v;
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
  if (report.contains("autokernel_compile") && report.contains("compile") &&
      !report["autokernel_compile"].value("ops", nlohmann::json::array()).empty()) {
    const Agreement a = judge_outputs(output_error(report["compile"]), output_error(report["autokernel_compile"]), dtype);
    say("torch.compile outputs: ", a.agrees, a.why);
  }
  return v;
}

std::vector<PredictedPart> prediction_parts(const Profile& profile, const nlohmann::json& manifest) {
  std::vector<PredictedPart> parts;
  for (auto& op : manifest.value("ops", nlohmann::json::array())) {
    const double s = op.value("speedup", 0.0);
    if (s <= 0) continue;
    PredictedPart part{op.value("type", ""), op.value("shape", ""), 0, s};
    for (auto& k : profile.kernels) {
      if (k.type != part.type) continue;
      const std::string shape = k.shape.empty() ? "" : shape_str(Shape(k.shape.begin(), k.shape.end()));
      if (shape.empty() || shape == part.shape) part.f += k.share;
    }
    if (part.f > 0) parts.push_back(part);
  }
  return parts;
}

double predicted_speedup(const std::vector<PredictedPart>& parts) {
  double rest = 1;
  for (auto& p : parts) rest -= p.f - p.f / p.s;
  return 1 / rest;
}

}  // namespace ak
