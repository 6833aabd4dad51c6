#pragma once
/// Per-launch GPU durations from CUPTI's activity records: the kernel's own time on the GPU,
/// free of launch overhead and of whatever else runs on the stream (the L2 flush, copies).
#include <cstdint>
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

  /// A kernel's interval on the GPU, in CUPTI's nanoseconds (the clock of now()).
  struct Span {
    uint64_t start, end;
  };
  /// Stops, flushes, and returns every kernel recorded since start(), whatever its name (a
  /// library's kernels: cuBLAS picks its own), in launch order; waits as stop() does for `expected`.
  static Result<std::vector<Span>> stop_all(size_t expected);
  /// CUPTI's clock now: a kernel whose span starts after this was launched after this call.
  static uint64_t now();
};

}  // namespace ak
