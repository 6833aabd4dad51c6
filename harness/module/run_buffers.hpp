#pragma once
/// The device buffers of one run: every buffer argument of a spec allocated at a shape and dtype,
/// the inputs filled from a seed, the counters zeroed. Stages, timing and tests all build their
/// runs here, so every buffer kind is handled the same way everywhere.
#include <vector>

#include "harness/gpu/gpu_context.hpp"
#include "harness/gpu/inputs.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// Pointers to the buffers of one launch, per kind, in the order of the spec's arguments.
struct RunBuffers {
  std::vector<const DeviceBuffer*> inputs, outputs, scratch, counters;
  /// Sampled validation (KernelSpec::validation_rows): the rows the reference computes;
  /// nullptr: all of them.
  const DeviceBuffer* sample_rows = nullptr;
  int64_t sample_count = 0;
};

/// One run's buffers, owned.
struct RunSet {
  std::vector<std::vector<char>> host_inputs;  ///< the bytes uploaded, to check inputs stay unchanged
  std::vector<DeviceBuffer> inputs, outputs, scratch, counters;
  size_t bytes = 0;                            ///< device memory they take
  RunBuffers view() const;
};

/// Allocates every buffer argument of `spec` at `shape` in dtype d, the inputs left undrawn
/// (DeviceInputs draws them on the GPU) and host_inputs empty; counters zeroed.
Result<RunSet> allocate_run_set(GpuContext& gpu, const KernelSpec& spec, const Shape& shape, DType d);

/// Allocates and fills every buffer argument of `spec` at `shape` in dtype d.
Result<RunSet> make_run_set(GpuContext& gpu, const KernelSpec& spec, const Shape& shape, DType d, Recipe recipe,
                            uint64_t seed);

/// The scale of a Fill::FanIn input: 1/sqrt(shape[a.dim]); 1 for other fills.
float fill_scale(const ArgSpec& a, const Shape& shape);

/// Before every launch, enqueued on the default stream: outputs and scratch poisoned (NaN), so
/// nothing an earlier launch wrote can be reused, and counters zeroed as the contract says.
Status poison_writable(GpuContext& gpu, const RunSet& r);

/// Sets the counters to zero (before a run, so one bad candidate cannot poison the next run).
Status zero_counters(GpuContext& gpu, const RunSet& r);

/// Empty when every counter is zero; otherwise which buffer and element is not.
std::string counters_left_set(GpuContext& gpu, const RunSet& r);

/// Empty when all `n` counters in `values` are zero; otherwise the first set one, and that it
/// stood so "after `when`" (the kernel ended, timed launch 17).
std::string first_counter_set(const uint32_t* values, size_t n, const std::string& when);

}  // namespace ak
