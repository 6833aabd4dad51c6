#include "harness/judging/counters_pass.hpp"

#include <chrono>

#include "harness/gpu/range_profiler.hpp"

namespace ak {
namespace {

int attribute(const GpuContext& gpu, CUdevice_attribute a) {
  int v = 0;
  gpu.driver().cuDeviceGetAttribute(&v, a, gpu.device());
  return v;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The passes' own buffers and each pass's launch and checks; the operands' are the type's.
class Passes {
 public:
  Passes(GpuContext& gpu, const DeviceChecks& checks, const CountersPassInput& in, CountersPassOperands& operands)
      : gpu_(gpu), drv_(gpu.driver()), checks_(checks), in_(in), operands_(operands) {}

  Status allocate();
  Status prepare();
  Status launch();
  Status check();
  bool sticky() const { return sticky_ || operands_.sticky(); }
  /// Where the pass stopped: "allocating", "preparing", "launching" or "checking".
  const std::string& step() const { return step_; }

 private:
  std::string where() const {
    return "the counters pass's launch " + std::to_string(pass_) + " on " + shape_str(in_.shape) + " " +
           dtype_name(in_.dtype);
  }
  Status cuda(CUresult r, const std::string& what) {
    if (r == CUDA_SUCCESS) return ok();
    sticky_ = sticky_ || cu_error_is_sticky(r);
    return error(what + ": " + cu_error_text(r));
  }

  GpuContext& gpu_;
  const CudaDriver& drv_;
  const DeviceChecks& checks_;
  const CountersPassInput& in_;
  CountersPassOperands& operands_;
  RunBuffers operands_now_;
  DeviceBuffer flush_, memory_slot_;
  int pass_ = 0;
  bool sticky_ = false;
  std::string step_ = "allocating";
};

Status Passes::allocate() {
  if (auto s = operands_.allocate(); !s) return s;
  // The timed launches start from a flushed L2: so do the passes, or the hit rates would
  // describe a launch that never happens in a timing.
  auto flush = gpu_.alloc(std::max<size_t>(gpu_.info().l2_bytes * 2, 64 << 20));
  if (!flush) return flush.error();
  flush_ = std::move(*flush);
  auto slot = gpu_.alloc(sizeof(uint64_t));
  if (!slot) return slot.error();
  memory_slot_ = std::move(*slot);
  return ok();
}

Status Passes::prepare() {
  step_ = "preparing";
  ++pass_;
  auto drawn = operands_.draw(pass_);
  if (!drawn) return drawn.error();
  operands_now_ = *drawn;
  if (auto s = cuda(in_.kernel.restore_module_memory(), "restoring the module's memory"); !s) return s;
  if (auto s = in_.kernel.before_launch(checks_, in_.shape, in_.dtype); !s) return s;
  if (auto s = cu_check(drv_.cuMemsetD8(memory_slot_.ptr(), 0xff, sizeof(uint64_t)), "clearing a check's slot"); !s)
    return s;
  if (auto s = cu_check(drv_.cuMemsetD8Async(flush_.ptr(), 0, flush_.bytes(), nullptr), "flushing the L2"); !s) return s;
  // Everything above is the harness's work: it must be done before the profiled range opens.
  return cuda(drv_.cuCtxSynchronize(), "preparing " + where());
}

Status Passes::launch() {
  step_ = "launching";
  if (auto s = cuda(in_.kernel.launch(in_.spec, in_.dtype, in_.shape, operands_now_, nullptr, false), where() + " failed");
      !s)
    return s;
  return cuda(drv_.cuCtxSynchronize(), where() + " failed");
}

Status Passes::check() {
  step_ = "checking";
  if (auto s = in_.kernel.check_module_memory(checks_, memory_slot_.ptr()); !s) return s;
  uint64_t first = 0;
  if (auto s = gpu_.download(&first, memory_slot_, sizeof first); !s) return s;
  if (std::string changed = in_.kernel.module_memory_change(first); !changed.empty())
    return error(changed + " after " + where());
  return operands_.judge(pass_, where());
}

}  // namespace

std::string counters_pass_stopped(const std::string& step, const Error& e) {
  const std::string& m = e.message;
  if (m.rfind(kCountersUnavailable, 0) == 0) return m.substr(std::string(kCountersUnavailable).size());
  if (e.harness)
    return "the counters pass stopped on the harness's own failure, not the candidate's, so no readings: " + m;
  if (step == "allocating") return "the counters pass could not allocate its buffers: " + m;
  if (step == "checking") return "the counters pass failed its checks, so its readings are withheld: " + m;
  if (step == "launching") return "the counters pass's launch failed: " + m;
  return "the counters pass could not prepare a launch: " + m;
}

std::optional<OccupancyLimit> kernel_occupancy(GpuContext& gpu, const LaunchableKernel& kernel, DType d) {
  if (kernel.planned() || kernel.block_threads() <= 0) return std::nullopt;
  auto blocks = kernel.max_blocks_per_sm(d);
  if (!blocks) return std::nullopt;
  const FunctionInfo f = kernel.attributes(d);
  OccupancyInputs in;
  in.max_threads_per_sm = attribute(gpu, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  in.max_blocks_per_sm = attribute(gpu, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  in.registers_per_sm = attribute(gpu, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  in.shared_bytes_per_sm = attribute(gpu, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  in.reserved_shared_bytes_per_block = attribute(gpu, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  in.block_threads = kernel.block_threads();
  in.registers_per_thread = f.registers;
  in.shared_bytes_per_block = f.static_smem_bytes + kernel.dynamic_smem_bytes();
  return occupancy_limit(in, *blocks);
}

HardwareCounters counters_pass(GpuContext& gpu, const DeviceChecks& checks, const CountersPassInput& in,
                               CountersPassOperands& operands, bool& sticky) {
  const auto t0 = std::chrono::steady_clock::now();
  sticky = false;
  CountersPhases phases;
  Passes passes(gpu, checks, in, operands);
  auto finish = [&](HardwareCounters c) {
    c.seconds = since(t0);
    c.phases = phases;
    sticky = passes.sticky();
    return c;
  };
  Status allocated = passes.allocate();
  phases.buffers = since(t0);
  if (!allocated) return finish(HardwareCounters::unavailable_because(counters_pass_stopped(passes.step(), allocated.error())));
  ProfiledLaunch launch{[&] { return passes.prepare(); }, [&] { return passes.launch(); },
                        [&] { return passes.check(); }, in.kernel.steps()};
  auto metrics = collect_range_metrics(gpu.context(), gpu.info().index, counter_metric_names(), launch, phases);
  if (!metrics) return finish(HardwareCounters::unavailable_because(counters_pass_stopped(passes.step(), metrics.error())));
  HardwareCounters c = counters_from_ranges(metrics->ranges);
  c.passes = metrics->passes;
  c.dropped_metrics = metrics->dropped;
  c.occupancy = kernel_occupancy(gpu, in.kernel, in.dtype);
  return finish(std::move(c));
}

}  // namespace ak
