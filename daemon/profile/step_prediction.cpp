#include "daemon/profile/step_prediction.hpp"

#include <algorithm>

#include "common/format.hpp"

namespace ak {

double predicted_speedup(const std::vector<PredictedPart>& parts) {
  double rest = 1;
  for (auto& p : parts) rest -= p.f - p.f / p.s;
  return 1 / rest;
}

std::string bound_by(const StepTimes& t) { return t.cpu_issue_us > t.gpu_busy_us ? "CPU" : "GPU"; }

StepPrediction kernel_time_prediction(const std::vector<PredictedPart>& gpu_parts, const std::string& why_not) {
  StepPrediction p;
  p.gpu_parts = gpu_parts;
  p.kernel_time_speedup = p.speedup = predicted_speedup(gpu_parts);
  p.why_not = why_not;
  return p;
}

StepPrediction predict_step(const std::vector<PredictedPart>& gpu_parts, const StepTimes& before,
                            const std::vector<CpuPart>& cpu_parts) {
  if (before.gpu_busy_us <= 0 || before.cpu_issue_us <= 0 || before.step_us <= 0)
    return kernel_time_prediction(gpu_parts, "the run measured no GPU busy time, CPU issue time or step time without the ops");
  StepPrediction p = kernel_time_prediction(gpu_parts, "");
  p.whole_step = true;
  p.cpu_parts = cpu_parts;
  p.before = before;
  p.after.gpu_busy_us = before.gpu_busy_us / p.kernel_time_speedup;
  p.gpu_removed_us = before.gpu_busy_us - p.after.gpu_busy_us;
  for (auto& c : cpu_parts) p.cpu_removed_us += c.removed_us();
  // A replacement slower on the CPU than what it replaced adds time: cpu_removed_us may be negative.
  // Never below zero: a CPU that issues nothing is a measurement gone wrong, not a prediction.
  p.after.cpu_issue_us = std::max(before.cpu_issue_us - p.cpu_removed_us, 0.0);
  // Measured separately, the step may come out a little shorter than the slower worker: no negative part.
  p.not_overlapped_us = std::max(before.step_us - std::max(before.gpu_busy_us, before.cpu_issue_us), 0.0);
  p.after.step_us = std::max(p.after.gpu_busy_us, p.after.cpu_issue_us) + p.not_overlapped_us;
  p.speedup = p.after.step_us > 0 ? before.step_us / p.after.step_us : 1;
  return p;
}

namespace {

std::string gpu_parts_text(const std::vector<PredictedPart>& parts) {
  std::string out;
  for (auto& part : parts) {
    out += " " + part.type + (part.shape.empty() ? "" : "@" + part.shape) + format_numbers(" f=%.3f s=%.2fx", part.f, part.s);
    if (part.served < 1) out += format_numbers(" (served %.0f%%)", 100 * part.served);
  }
  return parts.empty() ? " no part (no profile row of an exported type)" : out;
}

std::string times_text(const StepTimes& t) {
  return bound_by(t) + format_numbers("-bound: the CPU issues it in %.0f µs, the GPU is busy %.0f µs, step %.0f µs",
                                      t.cpu_issue_us, t.gpu_busy_us, t.step_us);
}

}  // namespace

std::string step_prediction_text(const StepPrediction& p) {
  std::string out = format_numbers("the Amdahl plan predicted %.3fx from", p.kernel_time_speedup) + gpu_parts_text(p.gpu_parts) + "\n";
  if (!p.whole_step) return out + "the whole step: counts kernel time only (" + p.why_not + ")\n";
  out += format_numbers("the whole step, GPU and CPU (max of the two plus %.0f µs that overlaps neither): predicted %.3fx\n",
                        p.not_overlapped_us, p.speedup);
  out += "  without the ops, measured " + times_text(p.before) + "\n";
  out += "  with the ops, predicted " + times_text(p.after) +
         format_numbers(" (the kernels' speedups remove %.0f µs of GPU time, the replaced functions %.0f µs of CPU time)\n",
                        p.gpu_removed_us, p.cpu_removed_us);
  for (auto& g : p.gpu_parts)
    out += "    " + g.type + (g.shape.empty() ? "" : "@" + g.shape) +
           format_numbers(": GPU %.0f -> %.0f µs a step", p.before.gpu_busy_us * g.f, p.before.gpu_busy_us * g.f / g.s) + "\n";
  for (auto& c : p.cpu_parts) {
    out += "    " + c.name + format_numbers(": %.1f calls a step, CPU %.1f -> %.1f µs a step", c.calls_per_step,
                                            c.original_us_per_step, c.op_us_per_step);
    if (c.launches_per_call >= 0) out += format_numbers(" (the original launched %.1f kernels a call)", c.launches_per_call);
    out += "\n";
  }
  return out;
}

nlohmann::json step_prediction_json(const StepPrediction& p) {
  auto times = [](const StepTimes& t) {
    return nlohmann::json{{"gpu_busy_us", t.gpu_busy_us}, {"cpu_issue_us", t.cpu_issue_us}, {"step_us", t.step_us}, {"bound", bound_by(t)}};
  };
  nlohmann::json j = {{"kernel_time_speedup", p.kernel_time_speedup}, {"whole_step", p.whole_step}, {"speedup", p.speedup}};
  j["gpu_parts"] = nlohmann::json::array();
  for (auto& part : p.gpu_parts) {
    j["gpu_parts"].push_back({{"type", part.type}, {"shape", part.shape}, {"f", part.f}, {"s", part.s}, {"served", part.served}});
    if (p.whole_step) j["gpu_parts"].back()["removed_us"] = p.before.gpu_busy_us * part.f * (1 - 1 / part.s);
  }
  if (!p.whole_step) {
    j["why_kernel_time_only"] = p.why_not;
    return j;
  }
  j["before"] = times(p.before);
  j["after"] = times(p.after);
  j["not_overlapped_us"] = p.not_overlapped_us;
  j["gpu_removed_us"] = p.gpu_removed_us;
  j["cpu_removed_us"] = p.cpu_removed_us;
  j["cpu_parts"] = nlohmann::json::array();
  for (auto& c : p.cpu_parts)
    j["cpu_parts"].push_back({{"name", c.name}, {"type", c.type}, {"calls_per_step", c.calls_per_step},
                              {"original_us_per_step", c.original_us_per_step}, {"op_us_per_step", c.op_us_per_step},
                              {"removed_us", c.removed_us()}, {"launches_per_call", c.launches_per_call}});
  return j;
}

}  // namespace ak
