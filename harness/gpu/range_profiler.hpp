#pragma once
/// Hardware counters through CUPTI's Range Profiler (cupti_range_profiler.h with the profiler host
/// API of cupti_profiler_host.h), one range per kernel launched (auto ranges), the replay passes
/// driven by the caller (user replay) so that every pass is a launch the harness prepares and
/// checks like any other. CUPTI loads its metric library (libnvperf_host.so) from beside
/// libcupti or from LD_LIBRARY_PATH; a machine without it, a driver that keeps counters to
/// administrators, a GPU without them: each is an Error whose message says which and what to do.
#include <cuda.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "harness/gpu/hardware_counters.hpp"

namespace ak {

struct RangeMetrics {
  /// Per kernel launched in a pass, in launch order: metric name -> value, for the metrics the
  /// GPU gives (the others are left out).
  std::vector<std::map<std::string, double>> ranges;
  int passes = 0;
  std::vector<std::string> dropped;   ///< metrics asked for that this GPU or CUPTI would not give
};

/// One pass of the replay: `prepare` runs before the profiled range opens (anything it launches,
/// input draws and poisoning included, stays out of the readings), `launch` inside it and must
/// return once its kernels have finished, `check` after the range closed.
struct ProfiledLaunch {
  std::function<Status()> prepare, launch, check;
  int kernels = 1;   ///< kernels one launch runs
};

/// Collects `metrics` (those the GPU has; the rest are dropped) over as many passes as CUPTI
/// needs. An Error from `prepare`, `launch` or `check` comes back as it was; CUPTI's own errors
/// start with "counters unavailable: ". `phases` gets the seconds of every part but `buffers`,
/// also when it fails.
Result<RangeMetrics> collect_range_metrics(CUcontext ctx, int device_index, const std::vector<std::string>& metrics,
                                           const ProfiledLaunch& pass, CountersPhases& phases);

/// What `metrics` come to on a chip (CUPTI's name: "GH100", "GA100", ...), worked out by CUPTI's
/// host library alone, no GPU needed: the ones the chip has, the ones dropped, and the replay
/// passes they take. The same choice collect_range_metrics makes on a GPU of that chip.
struct MetricPlan {
  std::vector<std::string> metrics, dropped;
  int passes = 0;
};
Result<MetricPlan> plan_metrics(const std::string& chip, const std::vector<std::string>& metrics);

/// CUPTI's own errors carry this prefix, so a caller tells them from its callbacks' errors.
inline constexpr const char* kCountersUnavailable = "counters unavailable: ";

}  // namespace ak
