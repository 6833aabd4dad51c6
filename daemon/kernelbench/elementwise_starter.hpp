#pragma once
/// A first kernel file, written without an LLM, for a KernelBench problem whose forward is a chain
/// of elementwise ops: the analyser's `elementwise` steps (daemon/kernelbench/elementwise_chain.py)
/// turned into one plain kernel of the user-type contract (docs/user-types.md), each step one
/// float operation as PyTorch computes it in fp32, with two knobs the builtin tuner moves
/// (AK_THREADS, AK_ITEMS). It is judged like any candidate; it is only a correct start.
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace ak {

/// The CUDA expression of one step, `operands` already written (values as vN, numbers as
/// literals), or an Error naming an op or an argument the generator does not know.
Result<std::string> elementwise_step_expression(const nlohmann::json& step, const std::vector<std::string>& operands);

/// The kernel file for the user type `type_name` of an accepted analysis that has `elementwise`
/// steps (grid `elements`), or an Error that says why none is written (no steps, an op it does
/// not know, an output size it cannot compute from the dims).
Result<std::string> elementwise_starter_text(const nlohmann::json& analysis, const std::string& type_name);

}  // namespace ak
