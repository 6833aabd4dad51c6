#include "harness/gpu/range_profiler.hpp"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <chrono>
#include <mutex>
#include <set>

#include "harness/gpu/cupti_refusal.hpp"
#include "harness/gpu/driver_call_times.hpp"

namespace ak {
namespace {

/// A CUPTI parameter block: zeroed, its size set (CUPTI reads the size to know the struct's version).
template <typename P>
P params(size_t size) {
  P p{};
  p.structSize = size;
  return p;
}

/// CUPTI's error, worded for the verdict (harness/gpu/cupti_refusal.hpp).
Error cupti_error(CUptiResult r, const std::string& what) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return error(std::string(kCountersUnavailable) + cupti_failure_reason(r, text, what, ProcessIdentity::current()));
}

#define AK_CUPTI(call, what)                                 \
  do {                                                       \
    if (CUptiResult r_ = (call); r_ != CUPTI_SUCCESS)        \
      return cupti_error(r_, what);                          \
  } while (0)

const char* support_word(CUpti_Profiler_Support_Level l) {
  return l == CUPTI_PROFILER_CONFIGURATION_DISABLED ? "disabled" : "unsupported";
}

/// Why the device cannot be profiled, or "".
std::string device_refusal(int device_index) {
  auto p = params<CUpti_Profiler_DeviceSupported_Params>(CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
  p.cuDevice = device_index;
  p.api = CUPTI_PROFILER_RANGE_PROFILING;
  if (cuptiProfilerDeviceSupported(&p) != CUPTI_SUCCESS) return "";  // no answer: let the calls say
  if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return "";
  const std::pair<const char*, CUpti_Profiler_Support_Level> parts[] = {
      {"this GPU architecture", p.architecture}, {"SLI", p.sli}, {"vGPU", p.vGpu},
      {"confidential computing", p.confidentialCompute}, {"a crypto-mining GPU", p.cmp}, {"WSL", p.wsl}};
  std::string why;
  for (auto& [name, level] : parts)
    if (level != CUPTI_PROFILER_CONFIGURATION_SUPPORTED && level != CUPTI_PROFILER_CONFIGURATION_UNKNOWN)
      why += std::string(why.empty() ? "" : ", ") + name + " (" + support_word(level) + ")";
  return std::string(kCountersUnavailable) + "CUPTI says this device cannot be profiled: " +
         (why.empty() ? "no reason given" : why);
}

/// The host side, made once per process: the chip's metric catalogue and the config image of
/// the metrics asked for (building it takes a good fraction of a second).
struct HostSide {
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<std::string> metrics;       ///< those of the request the chip has
  std::vector<std::string> dropped;       ///< those it has not, or the configuration refused
  std::vector<const char*> metric_ptrs;
  std::vector<uint8_t> config;
  size_t passes = 0;
};

std::set<std::string> base_metrics(CUpti_Profiler_Host_Object* host) {
  std::set<std::string> out;
  for (auto type : {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    auto p = params<CUpti_Profiler_Host_GetBaseMetrics_Params>(CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE);
    p.pHostObject = host;
    p.metricType = type;
    if (cuptiProfilerHostGetBaseMetrics(&p) != CUPTI_SUCCESS) continue;
    for (size_t i = 0; i < p.numMetrics; ++i) out.insert(p.ppMetricNames[i]);
  }
  return out;
}

Result<CUpti_Profiler_Host_Object*> open_host(const char* chip, std::vector<uint8_t>& availability) {
  auto init = params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = chip;
  init.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
  AK_CUPTI(cuptiProfilerHostInitialize(&init), std::string("opening the metric catalogue of chip ") + chip);
  return init.pHostObject;
}

void close_host(CUpti_Profiler_Host_Object* host) {
  auto p = params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
  p.pHostObject = host;
  cuptiProfilerHostDeinitialize(&p);
}

CUptiResult add_metrics(CUpti_Profiler_Host_Object* host, const std::vector<std::string>& metrics) {
  std::vector<const char*> names;
  for (auto& m : metrics) names.push_back(m.c_str());
  auto add = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  add.pHostObject = host;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  return cuptiProfilerHostConfigAddMetrics(&add);
}

/// The host side for `wanted` on `chip`: with `availability` (the context's counter availability
/// image) the counters this GPU lets be read, without it every counter of the chip.
Result<HostSide> make_host_side(const std::string& chip, std::vector<uint8_t>& availability,
                                const std::vector<std::string>& wanted) {
  HostSide h;
  auto host = open_host(chip.c_str(), availability);
  if (!host) return host.error();
  h.host = *host;
  const std::set<std::string> bases = base_metrics(h.host);
  // Without a catalogue (an older CUPTI) every metric is tried, and the profiler says which take.
  for (auto& m : wanted)
    if (bases.empty() || bases.count(m.substr(0, m.find('.')))) h.metrics.push_back(m);
    else h.dropped.push_back(m);
  if (h.metrics.empty()) return error(std::string(kCountersUnavailable) + "chip " + chip + " offers none of the metrics asked for");
  if (CUptiResult all = add_metrics(h.host, h.metrics); all != CUPTI_SUCCESS) {
    // One name the configuration refuses would cost every reading: start again, one at a time.
    close_host(h.host);
    host = open_host(chip.c_str(), availability);
    if (!host) return host.error();
    h.host = *host;
    std::vector<std::string> taken;
    for (auto& m : h.metrics)
      if (add_metrics(h.host, {m}) == CUPTI_SUCCESS) taken.push_back(m);
      else h.dropped.push_back(m);
    if (taken.empty()) return cupti_error(all, "adding the metrics to the profiler's configuration");
    h.metrics = std::move(taken);
  }
  for (auto& m : h.metrics) h.metric_ptrs.push_back(m.c_str());
  auto size = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  size.pHostObject = h.host;
  AK_CUPTI(cuptiProfilerHostGetConfigImageSize(&size), "sizing the profiler's configuration");
  h.config.resize(size.configImageSize);
  auto img = params<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  img.pHostObject = h.host;
  img.configImageSize = h.config.size();
  img.pConfigImage = h.config.data();
  AK_CUPTI(cuptiProfilerHostGetConfigImage(&img), "building the profiler's configuration");
  auto passes = params<CUpti_Profiler_Host_GetNumOfPasses_Params>(CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  passes.configImageSize = h.config.size();
  passes.pConfigImage = h.config.data();
  AK_CUPTI(cuptiProfilerHostGetNumOfPasses(&passes), "counting the profiler's passes");
  h.passes = passes.numOfPasses;
  return h;
}

/// The host side for `wanted` on the device of `ctx`, with the counters its driver lets be read.
Result<HostSide> make_device_host_side(CUcontext ctx, int device_index, const std::vector<std::string>& wanted) {
  auto chip = params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  chip.deviceIndex = size_t(device_index);
  AK_CUPTI(cuptiDeviceGetChipName(&chip), "naming the GPU's chip (cuptiDeviceGetChipName)");
  auto avail = params<CUpti_Profiler_GetCounterAvailability_Params>(CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  avail.ctx = ctx;
  AK_CUPTI(cuptiProfilerGetCounterAvailability(&avail), "asking which counters the GPU offers");
  std::vector<uint8_t> image(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = image.data();
  AK_CUPTI(cuptiProfilerGetCounterAvailability(&avail), "reading which counters the GPU offers");
  return make_host_side(chip.pChipName, image, wanted);
}

/// The host side for this request, made on first use; an Error is kept and given again (a
/// refusal does not change while the process lives).
Result<const HostSide*> host_side(CUcontext ctx, int device_index, const std::vector<std::string>& wanted) {
  static std::mutex mutex;
  static std::optional<Result<HostSide>> made;
  static std::vector<std::string> made_for;
  std::lock_guard<std::mutex> lock(mutex);
  if (made && made_for == wanted) {
    if (!*made) return made->error();
    return &made->value();
  }
  made_for = wanted;
  auto init = params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  if (CUptiResult r = cuptiProfilerInitialize(&init); r != CUPTI_SUCCESS)
    made = Result<HostSide>(cupti_error(r, "starting CUPTI's profiler (cuptiProfilerInitialize)"));
  else if (std::string why = device_refusal(device_index); !why.empty())
    made = Result<HostSide>(error(why));
  else
    made = make_device_host_side(ctx, device_index, wanted);
  if (!*made) return made->error();
  return &made->value();
}

/// The range profiler of a context while it lives.
class EnabledProfiler {
 public:
  CUpti_RangeProfiler_Object* object = nullptr;
  ~EnabledProfiler() { disable(); }
  void disable() {
    if (!object) return;
    TimedCall timed("cuptiRangeProfilerDisable");
    auto p = params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object;
    cuptiRangeProfilerDisable(&p);
    object = nullptr;
  }
};

Status stop(CUpti_RangeProfiler_Object* object, bool& all_submitted) {
  auto p = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
  p.pRangeProfilerObject = object;
  TimedCall timed("cuptiRangeProfilerStop");
  AK_CUPTI(cuptiRangeProfilerStop(&p), "closing a profiled pass");
  all_submitted = p.isAllPassSubmitted != 0;
  return ok();
}

Result<std::map<std::string, double>> evaluate_range(const HostSide& h, const std::vector<uint8_t>& data, size_t range) {
  std::vector<double> values(h.metrics.size());
  auto p = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
  p.pHostObject = h.host;
  p.pCounterDataImage = data.data();
  p.counterDataImageSize = data.size();
  p.rangeIndex = range;
  p.ppMetricNames = const_cast<const char**>(h.metric_ptrs.data());
  p.numMetrics = h.metric_ptrs.size();
  p.pMetricValues = values.data();
  AK_CUPTI(cuptiProfilerHostEvaluateToGpuValues(&p), "evaluating the metrics of kernel " + std::to_string(range + 1));
  std::map<std::string, double> out;
  for (size_t i = 0; i < values.size(); ++i) out[h.metrics[i]] = values[i];
  return out;
}

}  // namespace

namespace {

/// Adds the seconds from its making to its end (or to tick()) to one phase.
class PhaseClock {
 public:
  explicit PhaseClock(double& phase) : phase_(&phase), t0_(std::chrono::steady_clock::now()) {}
  ~PhaseClock() { tick(); }
  /// Closes this phase and opens `next`.
  void switch_to(double& next) {
    tick();
    phase_ = &next;
  }

 private:
  void tick() {
    const auto now = std::chrono::steady_clock::now();
    *phase_ += std::chrono::duration<double>(now - t0_).count();
    t0_ = now;
  }
  double* phase_;
  std::chrono::steady_clock::time_point t0_;
};

/// The counter data of one pass set, sized for `kernels` ranges.
Result<std::vector<uint8_t>> counter_data(CUpti_RangeProfiler_Object* object, const HostSide& host, size_t kernels) {
  auto size = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  size.pRangeProfilerObject = object;
  size.pMetricNames = const_cast<const char**>(host.metric_ptrs.data());
  size.numMetrics = host.metric_ptrs.size();
  size.maxNumOfRanges = kernels;
  size.maxNumRangeTreeNodes = uint32_t(kernels);
  AK_CUPTI(cuptiRangeProfilerGetCounterDataSize(&size), "sizing the counter data");
  std::vector<uint8_t> data(size.counterDataSize);
  auto init = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  init.pRangeProfilerObject = object;
  init.counterDataSize = data.size();
  init.pCounterData = data.data();
  AK_CUPTI(cuptiRangeProfilerCounterDataImageInitialize(&init), "preparing the counter data");
  return data;
}

Status set_config(CUpti_RangeProfiler_Object* object, const HostSide& host, std::vector<uint8_t>& data, size_t kernels) {
  auto config = params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
  config.pRangeProfilerObject = object;
  config.configSize = host.config.size();
  config.pConfig = host.config.data();
  config.counterDataImageSize = data.size();
  config.pCounterDataImage = data.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_UserReplay;
  config.maxRangesPerPass = kernels;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  TimedCall timed("cuptiRangeProfilerSetConfig");
  AK_CUPTI(cuptiRangeProfilerSetConfig(&config), "configuring the range profiler");
  return ok();
}

/// The metrics of every range the passes recorded.
Status read_ranges(CUpti_RangeProfiler_Object* object, const HostSide& host, const std::vector<uint8_t>& data,
                   RangeMetrics& out) {
  TimedCall timed("range profiler: decode and evaluate");
  auto decode = params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  decode.pRangeProfilerObject = object;
  AK_CUPTI(cuptiRangeProfilerDecodeData(&decode), "decoding the counter data");
  auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = data.data();
  info.counterDataImageSize = data.size();
  AK_CUPTI(cuptiRangeProfilerGetCounterDataInfo(&info), "counting the profiled kernels");
  if (info.numTotalRanges == 0)
    return error(std::string(kCountersUnavailable) + "the profiler recorded no kernel in " + std::to_string(out.passes) +
                 " passes (" + std::to_string(decode.numOfRangeDropped) + " ranges dropped)");
  for (size_t r = 0; r < info.numTotalRanges; ++r) {
    auto values = evaluate_range(host, data, r);
    if (!values) return values.error();
    out.ranges.push_back(std::move(*values));
  }
  return ok();
}

}  // namespace

Result<RangeMetrics> collect_range_metrics(CUcontext ctx, int device_index, const std::vector<std::string>& metrics,
                                           const ProfiledLaunch& pass, CountersPhases& phases) {
  PhaseClock clock(phases.setup);
  auto h = timed_call("range profiler: host side (made on first use)", [&] { return host_side(ctx, device_index, metrics); });
  if (!h) return h.error();
  const HostSide& host = **h;
  const size_t kernels = size_t(std::max(1, pass.kernels));

  // The clock outlives the profiler: a pass set that breaks off is disabled (the profiler's
  // destructor) within the phase it broke off in.
  RangeMetrics out;
  EnabledProfiler profiler;
  auto enable = params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
  enable.ctx = ctx;
  AK_CUPTI(timed_call("cuptiRangeProfilerEnable", [&] { return cuptiRangeProfilerEnable(&enable); }),
           "enabling the range profiler on the worker's context");
  profiler.object = enable.pRangeProfilerObject;
  auto data = counter_data(profiler.object, host, kernels);
  if (!data) return data.error();
  if (auto s = set_config(profiler.object, host, *data, kernels); !s) return s.error();

  out.dropped = host.dropped;
  // CUPTI says how many passes it needs; the bound only guards against one that never says done.
  const int most = int(host.passes) + 4;
  for (bool done = false; !done;) {
    if (out.passes == most)
      return error(std::string(kCountersUnavailable) + "CUPTI asked for more than " + std::to_string(most) + " passes");
    clock.switch_to(phases.prepare);
    if (auto s = pass.prepare(); !s) return s.error();
    clock.switch_to(phases.launch);
    auto start = params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    start.pRangeProfilerObject = profiler.object;
    AK_CUPTI(timed_call("cuptiRangeProfilerStart", [&] { return cuptiRangeProfilerStart(&start); }), "opening a profiled pass");
    Status launched = pass.launch();
    if (auto s = stop(profiler.object, done); !s) return s.error();
    if (!launched) return launched.error();
    ++out.passes;
    clock.switch_to(phases.check);
    if (auto s = pass.check(); !s) return s.error();
  }
  clock.switch_to(phases.read);
  if (auto s = read_ranges(profiler.object, host, *data, out); !s) return s.error();
  profiler.disable();
  return out;
}

Result<MetricPlan> plan_metrics(const std::string& chip, const std::vector<std::string>& metrics) {
  std::vector<uint8_t> every_counter;
  auto h = make_host_side(chip, every_counter, metrics);
  if (!h) return h.error();
  MetricPlan plan{h->metrics, h->dropped, int(h->passes)};
  close_host(h->host);
  return plan;
}

}  // namespace ak
