#include "daemon/loop/gpu_time.hpp"

#include <algorithm>

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

namespace {

/// "judged 75.0% of `whose` 20.0 s; idle: ending 5.0 s".
std::string judged_line(const std::array<double, kGpuStates>& seconds, const std::string& whose) {
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

}  // namespace

std::string gpu_time_line(const nlohmann::json& seconds_by_state) {
  if (!seconds_by_state.is_object()) return "";
  std::array<double, kGpuStates> s{};
  bool any = false;
  for (size_t i = 0; i < kGpuStates; ++i) {
    auto it = seconds_by_state.find(gpu_state_name(GpuState(i)));
    if (it != seconds_by_state.end() && it->is_number() && it->get<double>() > 0) s[i] = it->get<double>(), any = true;
  }
  return any ? judged_line(s, "its") : "";
}

GpuTime::GpuTime(size_t gpus, double now_s) : gpus_(gpus) {
  for (auto& g : gpus_) g.since = now_s;
}

void GpuTime::set(size_t gpu, GpuState s, double at_s) {
  if (gpu >= gpus_.size()) return;
  Gpu& g = gpus_[gpu];
  at_s = std::max(at_s, g.since);
  g.seconds[size_t(g.state)] += at_s - g.since;
  g.state = s;
  g.since = at_s;
}

std::array<double, kGpuStates> GpuTime::with_current(const Gpu& g, double now_s) const {
  auto s = g.seconds;
  s[size_t(g.state)] += std::max(0.0, now_s - g.since);
  return s;
}

nlohmann::json GpuTime::to_json(size_t gpu, double now_s) const {
  nlohmann::json j = nlohmann::json::object();
  if (gpu >= gpus_.size()) return j;
  const auto s = with_current(gpus_[gpu], now_s);
  for (size_t i = 0; i < kGpuStates; ++i)
    if (s[i] > 0) j[gpu_state_name(GpuState(i))] = s[i];
  return j;
}

std::string GpuTime::summary(double now_s) const {
  std::array<double, kGpuStates> sum{};
  for (auto& g : gpus_) {
    const auto s = with_current(g, now_s);
    for (size_t i = 0; i < kGpuStates; ++i) sum[i] += s[i];
  }
  return "the GPUs " + judged_line(sum, "their");
}

}  // namespace ak
