#pragma once
/// Where each GPU's wall time goes in a run: judging something, or idle and why. With several
/// GPUs the run is only as fast as the time they spend judging; this names what the rest went
/// to (the start, the loop thread's decisions, no kernel able to take another experiment, the
/// others finishing at the end) so that a scaling measurement can say what to fix. The loop
/// thread moves each GPU from one state to the next; the stretches add up to the GPU's time in
/// this process. state.json carries them per GPU and the end-of-run log line sums them.
#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/run_folder/gpu_states.hpp"

namespace ak {

class GpuTime {
 public:
  GpuTime(size_t gpus, double now_s);
  /// GPU `gpu` is in state `s` from `at_s` on. A time before the current stretch's start (a
  /// worker thread's clock read before the loop's) counts as that start.
  void set(size_t gpu, GpuState s, double at_s);
  GpuState state(size_t gpu) const { return gpus_[gpu].state; }
  /// Seconds in each state (the current stretch up to now_s), zero states left out.
  nlohmann::json to_json(size_t gpu, double now_s) const;
  /// One line over all GPUs: the share of GPU time judging, then each idle cause in seconds.
  std::string summary(double now_s) const;

 private:
  struct Gpu {
    GpuState state = GpuState::Start;
    double since = 0;
    GpuSeconds seconds{};
  };
  GpuSeconds with_current(const Gpu& g, double now_s) const;
  std::vector<Gpu> gpus_;
};

}  // namespace ak
