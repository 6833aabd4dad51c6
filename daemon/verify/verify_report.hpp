#pragma once
/// The text `autokernel verify` prints from the report of a model run (daemon/export/package/
/// autokernel_ops/verify.py): the step times of each way the model ran, what the op layer costs
/// (CPU time per call of each replacement, the GPU's idle time per step it adds), and the per-op
/// decision under torch.compile. Pure functions of the report, so that they are tested on the CPU.
#include <string>

#include <nlohmann/json.hpp>

namespace ak {

/// One line per run the report holds: eager, with the ops, the CUDA graphs, each torch.compile
/// mode (the fastest marked), torch.compile with the ops, autokernel_ops.capture without and with
/// the ops, and Liger-Kernel's patch: median, min, max ms and the error.
std::string timing_table(const nlohmann::json& report);

/// Per replaced function, the share of its calls an op served, why the others were not (declined in
/// Python, or PyTorch's op inside the op), and how many each exported file served; "" without.
std::string served_text(const nlohmann::json& report);

/// The CPU time of one call of each replacement beside the original's (the goal is at most
/// cpu_cost.goal_us), and the GPU's idle time per step with and without the ops; "" when the
/// report has neither.
std::string op_cost_text(const nlohmann::json& report);

/// The compile decision: the mode, compile alone, each op type alone, the set together, and
/// which types run under compilation; "" without one.
std::string compile_decision_text(const nlohmann::json& report);

}  // namespace ak
