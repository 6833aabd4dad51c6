#include "daemon/verify/model_agreement.hpp"

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

double predicted_speedup(const std::vector<PredictedPart>& parts) {
  double rest = 1;
  for (auto& p : parts) rest -= p.f - p.f / p.s;
  return 1 / rest;
}

}  // namespace ak
