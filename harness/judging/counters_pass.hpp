#pragma once
/// The counters pass: after a candidate's judged timing, and never among its timed launches, the
/// candidate is launched again at the timed shape and dtype while CUPTI's range profiler reads
/// the hardware counters, one launch per replay pass (two on Hopper, counter_metric_names). Every
/// pass is prepared as a timed launch is (fresh inputs, outputs poisoned, module memory restored,
/// every SM's shared memory and every allocation's slack poisoned, L2 flushed) and judged as a
/// checked one is (module memory left as found; inputs untouched, counters back at zero and
/// outputs right, as the type's operands judge them): a pass that fails its checks withholds the
/// readings. Where the operands come from and who judges the outputs is the type's: a built-in
/// type's DeviceInputs and reference kernel (harness/judging/builtin_counters_pass.hpp), a user
/// type's reference process (harness/user_types/user_counters_pass.hpp). The occupancy limit comes
/// from the driver's occupancy calculator, not from counters, so it is there whenever the kernel
/// loaded.
#include <string>

#include "harness/gpu/hardware_counters.hpp"
#include "harness/module/device_checks.hpp"
#include "harness/module/kernel_launch.hpp"

namespace ak {

/// The operands of a counters pass's launches, and their judge.
class CountersPassOperands {
 public:
  virtual ~CountersPassOperands() = default;
  /// The buffers that last through every pass, made once before the first.
  virtual Status allocate() = 0;
  /// Fresh inputs for pass `pass` (from 1), outputs and scratch poisoned, counters zeroed: the
  /// buffers the launch takes. What it enqueues is done before the pass's profiled range opens.
  virtual Result<RunBuffers> draw(int pass) = 0;
  /// After pass `pass`'s launch finished: an Error that says what is wrong when an input changed,
  /// a counter was left set or an output is wrong (`where` names the launch); Error::harness when
  /// the judge itself failed (a reference process that died), which is no fault of the kernel.
  virtual Status judge(int pass, const std::string& where) = 0;
  /// The last error lost the CUDA context (the worker must then be replaced).
  virtual bool sticky() const { return false; }
};

/// The kernel a counters pass launches, where.
struct CountersPassInput {
  const KernelSpec& spec;
  const Shape& shape;
  DType dtype;
  const LaunchableKernel& kernel;
};

/// The readings, or HardwareCounters::unavailable saying why none; `seconds` and `phases` either
/// way. `sticky` is set when a pass broke the context (the worker must then be replaced).
HardwareCounters counters_pass(GpuContext& gpu, const DeviceChecks& checks, const CountersPassInput& in,
                               CountersPassOperands& operands, bool& sticky);

/// Why the counters pass stopped, worded for the verdict: `step` is where it stopped
/// ("allocating", "preparing", "launching" or "checking"), `e` what stopped it. CUPTI's refusals
/// (kCountersUnavailable) are said as CUPTI said them.
std::string counters_pass_stopped(const std::string& step, const Error& e);

/// The occupancy limit of `kernel`'s entry point for dtype d on this GPU; nullopt for a launch
/// plan (its steps differ in block size) or when the driver will not say.
std::optional<OccupancyLimit> kernel_occupancy(GpuContext& gpu, const LaunchableKernel& kernel, DType d);

}  // namespace ak
