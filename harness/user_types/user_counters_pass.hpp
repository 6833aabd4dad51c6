#pragma once
/// A user type's operands for the counters pass (harness/judging/counters_pass.hpp), as its judged
/// timing has them (harness/user_types/user_timing.hpp): before each pass the reference process
/// draws fresh inputs with get_inputs() into the pool and poisons the outputs; after the launch it
/// judges the outputs against the module for those inputs, and that no input changed. A failure
/// of the process itself is the harness's (Error::harness), never a verdict on the kernel.
#include <memory>

#include "harness/judging/counters_pass.hpp"
#include "harness/user_types/user_reference.hpp"

namespace ak {

/// `ref` must outlive the operands.
std::unique_ptr<CountersPassOperands> user_counters_operands(UserReference& ref, const Shape& shape, DType d);

}  // namespace ak
