#pragma once
/// A built-in type's operands for the counters pass (harness/judging/counters_pass.hpp): each
/// pass's inputs drawn on the GPU by DeviceInputs from the pass's own seed, outputs and scratch
/// poisoned, counters zeroed; after the launch, the inputs compared with a copy taken before it,
/// the counters back at zero, the outputs against the type's reference kernel run on the pass's
/// inputs (the sampled rows drawn anew each pass), and what the judging used wiped.
#include <memory>

#include "harness/judging/counters_pass.hpp"
#include "harness/module/device_inputs.hpp"

namespace ak {

/// `reference` is the spec's reference with fp32 outputs; `seed` draws every pass's inputs and
/// sampled rows. Every reference must outlive the operands.
std::unique_ptr<CountersPassOperands> builtin_counters_operands(GpuContext& gpu, const DeviceInputs& inputs,
                                                                const DeviceChecks& checks, const KernelSpec& spec,
                                                                const Shape& shape, DType d,
                                                                const LaunchableKernel& reference, uint64_t seed);

}  // namespace ak
