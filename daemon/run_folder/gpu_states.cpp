#include "daemon/run_folder/gpu_states.hpp"

#include "common/format.hpp"

namespace ak {

const char* gpu_state_name(GpuState s) {
  switch (s) {
    case GpuState::Start: return "start";
    case GpuState::Starter: return "starter";
    case GpuState::Candidate: return "candidate";
    case GpuState::JudgedAgain: return "judged_again";
    case GpuState::Proposing: return "proposing";
    case GpuState::Loop: return "loop_thread";
    case GpuState::NoOpenKernel: return "no_open_kernel";
    case GpuState::LlmLimit: return "llm_limit";
    case GpuState::Ending: return "ending";
  }
  return "?";
}

bool gpu_state_busy(GpuState s) {
  return s == GpuState::Starter || s == GpuState::Candidate || s == GpuState::JudgedAgain || s == GpuState::Proposing;
}

std::string judged_line(const GpuSeconds& seconds, const std::string& whose) {
  double busy = 0, total = 0;
  std::string idle;
  for (size_t i = 0; i < kGpuStates; ++i) {
    total += seconds[i];
    if (gpu_state_busy(GpuState(i))) busy += seconds[i];
    else if (seconds[i] > 0) idle += std::string(", ") + gpu_state_name(GpuState(i)) + format_numbers(" %.1f s", seconds[i]);
  }
  return format_numbers("judged %.1f%% of ", total > 0 ? busy / total * 100 : 0.0) + whose +
         format_numbers(" %.1f s", total) + (idle.empty() ? "" : "; idle:" + idle.substr(1));
}

std::string gpu_time_line(const nlohmann::json& seconds_by_state) {
  if (!seconds_by_state.is_object()) return "";
  GpuSeconds s{};
  bool any = false;
  for (size_t i = 0; i < kGpuStates; ++i) {
    auto it = seconds_by_state.find(gpu_state_name(GpuState(i)));
    if (it != seconds_by_state.end() && it->is_number() && it->get<double>() > 0) s[i] = it->get<double>(), any = true;
  }
  return any ? judged_line(s, "its") : "";
}

}  // namespace ak
