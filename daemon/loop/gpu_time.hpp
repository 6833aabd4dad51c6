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

namespace ak {

enum class GpuState {
  Start,          ///< idle: from the loop's start to its first experiment
  Starter,        ///< judging a kernel's starter (experiment 0 of a kernel)
  Candidate,      ///< judging a candidate for the first time
  JudgedAgain,    ///< judging again: beside a newer best, after a harness failure, or the best alone
  Proposing,      ///< waiting, on its experiment's thread, for a slow proposer's answer
  Loop,           ///< idle: its verdict is back and waits for the loop thread (others' and its own)
  NoOpenKernel,   ///< idle: every open kernel is in flight elsewhere as much as its proposer allows
  LlmLimit,       ///< idle: the LLM answers as many questions at once as it may
  Ending,         ///< idle: nothing left to start (converged, a budget spent, a stop); others finish
};
constexpr size_t kGpuStates = 9;

const char* gpu_state_name(GpuState s);   ///< the key in state.json, e.g. "no_open_kernel"
bool gpu_state_busy(GpuState s);          ///< the GPU judges something (or waits on its proposal)

/// One GPU's seconds by state as state.json writes them ("candidate": 8.0, "start": 1.0), in
/// words: "judged 80.0% of its 10.0 s; idle: start 1.0 s, no_open_kernel 1.0 s" ("" when none).
/// Keys that name no state are left out.
std::string gpu_time_line(const nlohmann::json& seconds_by_state);

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
    std::array<double, kGpuStates> seconds{};
  };
  std::array<double, kGpuStates> with_current(const Gpu& g, double now_s) const;
  std::vector<Gpu> gpus_;
};

}  // namespace ak
