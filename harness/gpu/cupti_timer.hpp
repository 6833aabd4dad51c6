#pragma once
/// Per-launch GPU durations from CUPTI's activity records: the kernel's own time on the GPU,
/// free of launch overhead and of whatever else runs on the stream (the L2 flush, copies).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace ak {

class CuptiKernelTimer {
 public:
  /// Starts recording kernel activity (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).
  static Status start();
  /// Stops, flushes, and returns the durations in microseconds of the launches of the kernels
  /// whose mangled names are `kernels`, in launch order (two files paired in a timing may mangle
  /// differently: a file with tensor maps takes one more parameter). CUPTI may hand records back
  /// late, so it flushes again until `expected` have come or a second has passed; fewer may come.
  static Result<std::vector<double>> stop(const std::vector<std::string>& kernels, size_t expected);
  /// As stop(), for the kernels whose names `mine` accepts. A record's name can be stale: seen on
  /// an H100, a kernel of a module loaded after another was unloaded carried the unloaded one's
  /// kernel name (CUPTI names a function by a handle the driver hands out again), so a timing that
  /// loads and unloads candidates may rather name what is not its own.
  static Result<std::vector<double>> stop_if(const std::function<bool(const std::string&)>& mine, size_t expected);

  /// A kernel's interval on the GPU, in CUPTI's nanoseconds (the clock of now()).
  struct Span {
    uint64_t start, end;
  };
  /// Stops, flushes, and returns every kernel recorded since start(), whatever its name (a
  /// library's kernels: cuBLAS picks its own), in launch order; waits as stop() does for `expected`.
  static Result<std::vector<Span>> stop_all(size_t expected);
  /// As stop_if(), the spans of the kernels `mine` accepts, in launch order.
  static Result<std::vector<Span>> stop_spans_if(const std::function<bool(const std::string&)>& mine, size_t expected);
  /// CUPTI's clock now: a kernel whose span starts after this was launched after this call.
  static uint64_t now();
  /// What the last stop() left out, for a timing that got fewer records than it launched: the
  /// records of other kernels (how many, and the first one's name) and the records CUPTI dropped
  /// for want of buffer space.
  static std::string last_shortfall();
};

}  // namespace ak
