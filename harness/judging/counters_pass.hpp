#pragma once
/// The counters pass: after a candidate's judged timing, and never among its timed launches, the
/// candidate is launched again at the timed shape and dtype while CUPTI's range profiler reads
/// the hardware counters, one launch per replay pass. Every pass is prepared as a timed launch is
/// (fresh inputs, outputs poisoned, module memory restored, L2 flushed) and judged as a checked
/// one is (inputs untouched, module memory and counters left as found, outputs against the
/// reference): a pass that fails its checks withholds the readings. The occupancy limit comes
/// from the driver's occupancy calculator, not from counters, so it is there whenever the
/// kernel loaded.
#include "harness/gpu/hardware_counters.hpp"
#include "harness/module/device_checks.hpp"
#include "harness/module/device_inputs.hpp"
#include "harness/module/kernel_launch.hpp"

namespace ak {

struct CountersPassInput {
  const KernelSpec& spec;
  const Shape& shape;
  DType dtype;
  const LaunchableKernel& kernel;
  const LaunchableKernel& reference;   ///< the spec's reference with fp32 outputs
  uint64_t seed;                       ///< draws the passes' inputs and sampled rows
};

/// The readings, or HardwareCounters::unavailable saying why none. `sticky` is set when a pass
/// broke the context (the worker must then be replaced).
HardwareCounters counters_pass(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks,
                               const CountersPassInput& in, bool& sticky);

/// The occupancy limit of `kernel`'s entry point for dtype d on this GPU; nullopt for a launch
/// plan (its steps differ in block size) or when the driver will not say.
std::optional<OccupancyLimit> kernel_occupancy(GpuContext& gpu, const LaunchableKernel& kernel, DType d);

}  // namespace ak
