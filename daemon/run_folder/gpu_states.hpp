#pragma once
/// The states a GPU's time is counted in, as state.json names them (`gpus[].seconds`): judging
/// something, or idle and why. The loop counts them (daemon/loop/gpu_time.hpp); the end-of-run
/// log line and `status` put them in words with judged_line and gpu_time_line.
#include <array>
#include <string>

#include <nlohmann/json.hpp>

namespace ak {

enum class GpuState {
  Start,          ///< idle: from the loop's start to its first experiment
  Starter,        ///< judging a kernel's starter (experiment 0 of a kernel)
  Candidate,      ///< judging a candidate for the first time
  JudgedAgain,    ///< judging again: beside a newer best, with more launches, after a harness failure, or the best alone
  Proposing,      ///< waiting, on its experiment's thread, for a slow proposer's answer
  Loop,           ///< idle: its verdict is back and waits for the loop thread (others' and its own)
  NoOpenKernel,   ///< idle: every open kernel is in flight elsewhere as much as its proposer allows
  LlmLimit,       ///< idle: the LLM answers as many questions at once as it may
  Ending,         ///< idle: nothing left to start (converged, a budget spent, a stop); others finish
};
constexpr size_t kGpuStates = 9;
using GpuSeconds = std::array<double, kGpuStates>;

const char* gpu_state_name(GpuState s);   ///< the key in state.json, e.g. "no_open_kernel"
bool gpu_state_busy(GpuState s);          ///< the GPU judges something (or waits on its proposal)

/// "judged 75.0% of `whose` 20.0 s; idle: ending 5.0 s": the share judging, then each idle cause.
std::string judged_line(const GpuSeconds& seconds, const std::string& whose);

/// One GPU's seconds as state.json writes them ("candidate": 8.0, "start": 1.0) in words, "its":
/// "judged 80.0% of its 10.0 s; idle: start 1.0 s, no_open_kernel 1.0 s" ("" when none). Keys
/// that name no state are left out.
std::string gpu_time_line(const nlohmann::json& seconds_by_state);

}  // namespace ak
