// The states of a GPU's time as state.json names them, and the words the log and status put
// them in.
#include "daemon/run_folder/gpu_states.hpp"

#include <catch2/catch.hpp>

namespace ak {

TEST_CASE("judging a starter, a candidate, one judged again or waiting on a proposal is busy, the rest idle", "[run_folder][gpu-time]") {
  for (GpuState s : {GpuState::Starter, GpuState::Candidate, GpuState::JudgedAgain, GpuState::Proposing}) CHECK(gpu_state_busy(s));
  for (GpuState s : {GpuState::Start, GpuState::Loop, GpuState::NoOpenKernel, GpuState::LlmLimit, GpuState::Ending})
    CHECK_FALSE(gpu_state_busy(s));
  CHECK(std::string(gpu_state_name(GpuState::NoOpenKernel)) == "no_open_kernel");
}

TEST_CASE("one GPU's seconds as state.json writes them read as one line, unknown keys left out", "[run_folder][gpu-time]") {
  const nlohmann::json j = {{"start", 2.0}, {"candidate", 7.0}, {"loop_thread", 1.0}, {"someday", 3.0}};
  CHECK(gpu_time_line(j) == "judged 70.0% of its 10.0 s; idle: start 2.0 s, loop_thread 1.0 s");
  CHECK(gpu_time_line(nlohmann::json::object()).empty());
  CHECK(gpu_time_line(nlohmann::json("a string")).empty());
  CHECK(gpu_time_line(nlohmann::json{{"candidate", "eight"}}).empty());
}

TEST_CASE("the judged line over several GPUs' seconds says whose", "[run_folder][gpu-time]") {
  GpuSeconds s{};
  s[size_t(GpuState::Candidate)] = 15;
  s[size_t(GpuState::Ending)] = 5;
  CHECK(judged_line(s, "their") == "judged 75.0% of their 20.0 s; idle: ending 5.0 s");
  CHECK(judged_line(GpuSeconds{}, "its") == "judged 0.0% of its 0.0 s");
}

}  // namespace ak
