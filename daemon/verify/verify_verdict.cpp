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
