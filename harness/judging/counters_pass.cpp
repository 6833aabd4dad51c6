#include "harness/judging/counters_pass.hpp"

#include "harness/gpu/range_profiler.hpp"
#include "harness/judging/evaluation_seeds.hpp"
#include "harness/judging/reference_outputs.hpp"

namespace ak {
namespace {

int attribute(const GpuContext& gpu, CUdevice_attribute a) {
  int v = 0;
  gpu.driver().cuDeviceGetAttribute(&v, a, gpu.device());
  return v;
}

/// The passes' buffers and the checks of each pass.
class Passes {
 public:
  Passes(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks, const CountersPassInput& in)
      : gpu_(gpu), drv_(gpu.driver()), inputs_(inputs), checks_(checks), in_(in) {}

  Status allocate();
  Status prepare();
  Status launch();
  Status check();
  bool sticky() const { return sticky_; }
  /// What the pass was doing when it stopped: "preparing", "launching" or "checking".
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
  const DeviceInputs& inputs_;
  const DeviceChecks& checks_;
  const CountersPassInput& in_;
  std::optional<RunSet> set_;
  std::vector<DeviceBuffer> pristine_;
  DeviceBuffer flush_, memory_slot_;
  int pass_ = 0;
  bool sticky_ = false;
  std::string step_ = "preparing";
};

Status Passes::allocate() {
  auto set = allocate_run_set(gpu_, in_.spec, in_.shape, in_.dtype);
  if (!set) return set.error();
  set_ = std::move(*set);
  for (auto& b : set_->inputs) {
    auto copy = gpu_.alloc(b.bytes());
    if (!copy) return copy.error();
    pristine_.push_back(std::move(*copy));
  }
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
  if (auto s = inputs_.fill(in_.spec, in_.shape, in_.dtype, *set_, mix_seed(in_.seed + uint64_t(pass_))); !s) return s;
  for (size_t i = 0; i < set_->inputs.size(); ++i)
    if (auto s = cu_check(drv_.cuMemcpyDtoD(pristine_[i].ptr(), set_->inputs[i].ptr(), set_->inputs[i].bytes()),
                          "keeping a copy of the counters pass's inputs");
        !s)
      return s;
  if (auto s = poison_writable(gpu_, *set_); !s) return s;
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
  if (auto s = cuda(in_.kernel.launch(in_.spec, in_.dtype, in_.shape, set_->view(), nullptr, false), where() + " failed");
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
  if (std::string left = counters_left_set(gpu_, *set_); !left.empty()) return error(left + " after " + where());
  for (size_t i = 0; i < set_->inputs.size(); ++i) {
    auto differ = checks_.differing_bytes(set_->inputs[i], pristine_[i], pristine_[i].bytes());
    if (!differ) return differ.error();
    if (*differ) return error("the kernel wrote into its input during " + where());
  }
  CUresult r = CUDA_SUCCESS;
  auto expected = reference_outputs(gpu_, checks_, in_.spec, in_.reference, set_->view(), in_.shape, in_.dtype,
                                    mix_seed(in_.seed ^ uint64_t(pass_) << 32), r);
  if (!expected) {
    if (auto s = cuda(r, "the reference kernel failed"); !s) return s;
    return expected.error();
  }
  for (size_t i = 0; i < set_->outputs.size(); ++i) {
    auto cmp = expected->judge(i, set_->outputs[i], in_.dtype, in_.spec.tolerance(in_.dtype));
    if (!cmp) return cmp.error();
    if (!cmp->pass()) return error("wrong output during " + where() + ": " + cmp->describe() + expected->sampled_note());
  }
  return expected->wipe();
}

}  // namespace

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

HardwareCounters counters_pass(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks,
                               const CountersPassInput& in, bool& sticky) {
  sticky = false;
  HardwareCounters c;
  Passes passes(gpu, inputs, checks, in);
  if (auto s = passes.allocate(); !s) {
    c.unavailable = "the counters pass could not allocate its buffers: " + s.error().message;
    return c;
  }
  ProfiledLaunch launch{[&] { return passes.prepare(); }, [&] { return passes.launch(); },
                        [&] { return passes.check(); }, in.kernel.steps()};
  auto metrics = collect_range_metrics(gpu.context(), gpu.info().index, counter_metric_names(), launch);
  sticky = passes.sticky();
  if (!metrics) {
    const std::string& m = metrics.error().message;
    const bool cupti = m.rfind(kCountersUnavailable, 0) == 0;
    if (cupti) c.unavailable = m.substr(std::string(kCountersUnavailable).size());
    else if (passes.step() == "checking") c.unavailable = "the counters pass failed its checks, so its readings are withheld: " + m;
    else if (passes.step() == "launching") c.unavailable = "the counters pass's launch failed: " + m;
    else c.unavailable = "the counters pass could not prepare a launch: " + m;
    return c;
  }
  const int passes_run = metrics->passes;
  c = counters_from_ranges(metrics->ranges);
  c.passes = passes_run;
  c.dropped_metrics = metrics->dropped;
  c.occupancy = kernel_occupancy(gpu, in.kernel, in.dtype);
  return c;
}

}  // namespace ak
