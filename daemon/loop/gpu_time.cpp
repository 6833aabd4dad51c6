#include "daemon/loop/gpu_time.hpp"

#include <algorithm>

namespace ak {

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

GpuSeconds GpuTime::with_current(const Gpu& g, double now_s) const {
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
  GpuSeconds sum{};
  for (auto& g : gpus_) {
    const auto s = with_current(g, now_s);
    for (size_t i = 0; i < kGpuStates; ++i) sum[i] += s[i];
  }
  return "the GPUs " + judged_line(sum, "their");
}

}  // namespace ak
