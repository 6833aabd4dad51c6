#include "harness/judged_timing.hpp"

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "harness/cupti_timer.hpp"
#include "harness/reference_outputs.hpp"

namespace ak {
namespace {

struct Event {
  const CudaDriver& d;
  CUevent e = nullptr;
  explicit Event(const CudaDriver& drv) : d(drv) { d.cuEventCreate(&e, CU_EVENT_DEFAULT); }
  Event(Event&& o) noexcept : d(o.d), e(o.e) { o.e = nullptr; }
  ~Event() {
    if (e) d.cuEventDestroy(e);
  }
};

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// A launch whose outputs and inputs are copied aside, to be judged after the timing.
struct CheckedLaunch {
  int pair = 0;
  std::vector<DeviceBuffer> outputs, inputs;
};

/// The pairs whose first-kernel launch is checked: `count` distinct ones among the timed pairs.
std::vector<int> pick_checked(int first, int count, int available, uint64_t seed) {
  std::vector<int> all(static_cast<size_t>(available));
  for (int i = 0; i < available; ++i) all[size_t(i)] = first + i;
  for (int i = available - 1; i > 0; --i) std::swap(all[size_t(i)], all[size_t(mix(seed + uint64_t(i)) % uint64_t(i + 1))]);
  all.resize(size_t(std::min(count, available)));
  std::sort(all.begin(), all.end());
  return all;
}

Status allocate_like(GpuContext& gpu, const std::vector<DeviceBuffer>& like, std::vector<DeviceBuffer>& out) {
  for (auto& b : like) {
    auto c = gpu.alloc(b.bytes());
    if (!c) return c.error();
    out.push_back(std::move(*c));
  }
  return ok();
}

Status copy_aside(GpuContext& gpu, const std::vector<DeviceBuffer>& from, const std::vector<DeviceBuffer>& to) {
  for (size_t i = 0; i < from.size(); ++i)
    if (auto s = cu_check(gpu.driver().cuMemcpyDtoDAsync(to[i].ptr(), from[i].ptr(), from[i].bytes(), nullptr),
                          "copying a timed launch's buffers aside");
        !s)
      return s;
  return ok();
}

/// The first kernel's counters left set, if any: "counter 3 is 1 after timed launch 17".
Result<std::string> counters_in_log(GpuContext& gpu, const DeviceBuffer& log, size_t slot_bytes,
                                    const std::vector<int>& slots_to_check, const std::vector<std::string>& slot_names) {
  std::vector<uint32_t> all(log.bytes() / sizeof(uint32_t));
  if (auto s = gpu.download(all.data(), log, log.bytes()); !s) return s.error();
  const size_t per_slot = slot_bytes / sizeof(uint32_t);
  for (int slot : slots_to_check)
    if (std::string left = first_counter_set(all.data() + size_t(slot) * per_slot, per_slot, slot_names[size_t(slot)]);
        !left.empty())
      return left;
  return std::string();
}

}  // namespace

Result<JudgedTiming> judged_timing(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks,
                                   const KernelSpec& spec,
                                   const Shape& shape, DType d, const std::vector<TimedKernel>& kernels,
                                   const LaunchableKernel* reference, const JudgedTimingPlan& plan, bool& sticky) {
  const CudaDriver& drv = gpu.driver();
  sticky = false;
  auto fail = [&](CUresult r, const std::string& when) -> Result<JudgedTiming> {
    sticky = cu_error_is_sticky(r);
    return error(when + ": " + cu_error_text(r));
  };
  if (kernels.empty() || kernels.size() > 2) return error("judged_timing takes one or two kernels");
  for (auto& k : kernels)
    if (k.name != kernels[0].name) return error("paired kernels must share their entry point's name");
  if (plan.checked_launches > 0 && !reference) return error("checked launches need the reference");
  auto set = allocate_run_set(gpu, spec, shape, d);
  if (!set) return set.error();
  const RunBuffers bufs = set->view();
  // Writing a buffer twice the size of L2 before each launch evicts the previous launch's data.
  auto flush = gpu.alloc(std::max<size_t>(gpu.info().l2_bytes * 2, 64 << 20));
  if (!flush) return flush.error();
  size_t counter_bytes = 0;
  for (auto& c : set->counters) counter_bytes += c.bytes();

  const int n = int(kernels.size());
  auto seed_of = [&](int pair) { return mix(plan.seed ^ (uint64_t(pair) * 0xd1342543de82ef95ull)); };
  auto prepare = [&](int pair, int launch_no) -> Status {
    if (auto s = inputs.fill(spec, shape, d, *set, seed_of(pair)); !s) return s;
    if (auto s = poison_writable(gpu, *set); !s) return s;
    return cu_check(drv.cuMemsetD8Async(flush->ptr(), (unsigned char)(launch_no & 0xff), flush->bytes(), nullptr),
                    "flushing the L2");
  };
  auto order = [&](int pair, int i) { return n == 1 ? 0 : (pair % 2 == 0 ? i : 1 - i); };

  // The first warm-up launch, timed, sizes the rest: a slow kernel (a reference attention takes
  // a tenth of a second) gets fewer launches so one timing stays within seconds, never below 10.
  Event w0(drv), w1(drv);
  if (auto s = prepare(0, 0); !s) return s.error();
  drv.cuEventRecord(w0.e, nullptr);
  if (CUresult r = kernels[0].launch(bufs); r != CUDA_SUCCESS) return fail(r, "warm-up launch failed");
  drv.cuEventRecord(w1.e, nullptr);
  if (CUresult r = drv.cuCtxSynchronize(); r != CUDA_SUCCESS) return fail(r, "warm-up failed");
  float first_ms = 0;
  drv.cuEventElapsedTime(&first_ms, w0.e, w1.e);
  const BenchmarkPlan sized = fit_plan(plan.launches, first_ms);
  const int warm = std::max(1, sized.warmup), reps = sized.repetitions, pairs = warm + reps;

  // Every launch's counters are copied into a slot of this log, to be read once at the end.
  std::vector<std::string> slot_names;
  std::vector<int> first_kernel_slots;
  DeviceBuffer counter_log;
  if (counter_bytes > 0) {
    auto log = gpu.alloc(counter_bytes * size_t(pairs * n));
    if (!log) return log.error();
    counter_log = std::move(*log);
  }
  const std::vector<int> checked_pairs = pick_checked(warm, plan.checked_launches, reps, plan.seed ^ 0xc4ec4ed);
  std::vector<CheckedLaunch> checked(checked_pairs.size());
  for (size_t c = 0; c < checked.size(); ++c) {
    checked[c].pair = checked_pairs[c];
    if (auto s = allocate_like(gpu, set->outputs, checked[c].outputs); !s) return s.error();
    if (auto s = allocate_like(gpu, set->inputs, checked[c].inputs); !s) return s.error();
  }
  std::vector<Event> starts, ends;
  std::vector<int> timed_kernel;   // which kernel each timed launch ran, in launch order
  starts.reserve(size_t(reps * n));
  ends.reserve(size_t(reps * n));

  for (int pair = 0; pair < pairs; ++pair) {
    const bool timed = pair >= warm;
    if (pair == warm) {
      if (CUresult r = drv.cuCtxSynchronize(); r != CUDA_SUCCESS) return fail(r, "warm-up failed");
      if (auto s = CuptiKernelTimer::start(); !s) return s.error();
    }
    for (int i = 0; i < n; ++i) {
      const int k = order(pair, i);
      const int launch_no = pair * n + i;
      if (pair > 0 || i > 0)
        if (auto s = prepare(pair, launch_no); !s) return s.error();
      if (timed) starts.emplace_back(drv), drv.cuEventRecord(starts.back().e, nullptr);
      if (pair > 0 || i > 0)  // the very first launch ran above, to size the plan
        if (CUresult r = kernels[size_t(k)].launch(bufs); r != CUDA_SUCCESS) {
          if (timed) (void)CuptiKernelTimer::stop(kernels[0].name, 0);
          return fail(r, std::string(timed ? "timed" : "warm-up") + " launch failed");
        }
      if (timed) ends.emplace_back(drv), drv.cuEventRecord(ends.back().e, nullptr), timed_kernel.push_back(k);
      if (counter_bytes > 0) {
        size_t off = size_t(launch_no) * counter_bytes;
        for (auto& c : set->counters) {
          drv.cuMemcpyDtoDAsync(counter_log.ptr() + off, c.ptr(), c.bytes(), nullptr);
          off += c.bytes();
        }
        slot_names.push_back(std::string(timed ? "timed" : "warm-up") + " launch " + std::to_string(timed ? pair - warm + 1 : pair + 1));
        if (k == 0) first_kernel_slots.push_back(launch_no);
      }
      if (k == 0)
        for (CheckedLaunch& c : checked)
          if (c.pair == pair) {
            if (auto s = copy_aside(gpu, set->outputs, c.outputs); !s) return s.error();
            if (auto s = copy_aside(gpu, set->inputs, c.inputs); !s) return s.error();
          }
    }
  }
  CUresult r = drv.cuCtxSynchronize();
  auto cupti = CuptiKernelTimer::stop(kernels[0].name, size_t(reps * n));
  if (r != CUDA_SUCCESS) return fail(r, "timed launches failed");
  if (!cupti) return cupti.error();

  JudgedTiming out;
  out.bytes = set->bytes;
  std::vector<std::vector<double>> cupti_k(static_cast<size_t>(n)), events_k(static_cast<size_t>(n));
  const bool all_records = cupti->size() == timed_kernel.size();
  for (size_t i = 0; i < timed_kernel.size(); ++i) {
    float ms = 0;
    drv.cuEventElapsedTime(&ms, starts[i].e, ends[i].e);
    events_k[size_t(timed_kernel[i])].push_back(double(ms) * 1000.0);
    if (all_records) cupti_k[size_t(timed_kernel[i])].push_back((*cupti)[i]);
  }
  for (int k = 0; k < n; ++k) {
    out.timings.push_back(summarize(all_records ? cupti_k[size_t(k)] : events_k[size_t(k)], events_k[size_t(k)]));
    if (!all_records) {
      out.timings.back().source = "CUDA events: CUPTI handed back " + std::to_string(cupti->size()) + " of " +
                                  std::to_string(timed_kernel.size()) + " kernel records";
      spdlog::warn("timing {}: {}", kernels[0].name, out.timings.back().source);
    }
  }
  if (n == 2) out.paired = all_records ? pair_up(cupti_k[0], cupti_k[1]) : pair_up(events_k[0], events_k[1]);

  // The judging: counters, then each checked launch against the reference for its own inputs.
  const RunCase at{shape, d, Recipe::Normal, plan.seed};
  auto failure = [&](const std::string& msg) {
    StageFailure f;
    f.message = msg;
    f.at = at;
    return f;
  };
  if (counter_bytes > 0) {
    auto left = counters_in_log(gpu, counter_log, counter_bytes, first_kernel_slots, slot_names);
    if (!left) return left.error();
    if (!left->empty()) {
      out.failure = failure(*left + " (on " + shape_str(shape) + " " + dtype_name(d) + ")");
      return out;
    }
  }
  for (const CheckedLaunch& c : checked) {
    const std::string which = "timed launch " + std::to_string(c.pair - warm + 1) + " of " + std::to_string(reps) +
                              " on " + shape_str(shape) + " " + dtype_name(d);
    if (auto s = inputs.fill(spec, shape, d, *set, seed_of(c.pair)); !s) return s.error();
    CUresult ref_error = CUDA_SUCCESS;
    auto expected = reference_outputs(gpu, checks, spec, *reference, bufs, shape, d, seed_of(c.pair) ^ 0x5a3b1e, ref_error);
    if (!expected) return ref_error != CUDA_SUCCESS ? fail(ref_error, expected.error().message) : expected.error();
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      auto differ = checks.differing_bytes(c.inputs[i], set->inputs[i], c.inputs[i].bytes());
      if (!differ) return differ.error();
      if (*differ) {
        out.failure = failure("the kernel wrote into its input during " + which + ": inputs are read-only");
        return out;
      }
    }
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      auto cmp = expected->judge(i, c.outputs[i], d, spec.tolerance(d));
      if (!cmp) return cmp.error();
      if (!cmp->pass()) {
        out.failure = failure("wrong output during timing (" + which + "): " + cmp->describe() + expected->sampled_note() +
                              ": the kernel behaves differently when it is timed");
        out.failure->comparison = *cmp;
        return out;
      }
    }
  }
  return out;
}

}  // namespace ak
