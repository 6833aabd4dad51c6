#pragma once
/// Time spent in each CUDA driver call: what finds the calls that wait when the GPUs of one box
/// share a driver (docs/operations.md, "Which driver calls wait"). With AUTOKERNEL_DRIVER_TIMES
/// naming a folder, the driver's table (harness/gpu/cuda_driver.hpp) is wrapped so that every call
/// is timed, and each worker writes its totals there after every verdict. A CUPTI range profiler
/// on one GPU made every cuMemAlloc and cuMemFree of the others wait (docs/results.md); this is
/// how that was seen.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/gpu/cuda_driver.hpp"

namespace ak {

struct DriverCallTime {
  std::string name;        ///< as cuda.h spells it ("cuMemAlloc")
  uint64_t calls = 0;
  double total_ms = 0, max_ms = 0;
  uint64_t over_1ms = 0;   ///< calls that took more than a millisecond
};

/// Wraps every entry of `d` with a timer. The totals are the process's: one table is timed at a
/// time (a second table's wrapping takes over), and wrapping a table twice changes nothing.
void time_driver_calls(CudaDriver& d);

/// Adds one call of `name` that took `ns` to the totals, while a driver table is timed: the calls
/// outside the driver's table (CUPTI's) and the phases of a stage, so that the table says which
/// wait beside the driver's own. Nothing is counted while no table is timed.
void add_call_time(const std::string& name, uint64_t ns);

/// Times its scope as one call of `name` (add_call_time).
class TimedCall {
 public:
  explicit TimedCall(const char* name) : name_(name), t0_(std::chrono::steady_clock::now()) {}
  ~TimedCall();
  TimedCall(const TimedCall&) = delete;
  TimedCall& operator=(const TimedCall&) = delete;

 private:
  const char* name_;
  std::chrono::steady_clock::time_point t0_;
};

/// `f()`'s result, its time counted as one call of `name` (add_call_time).
template <typename F>
auto timed_call(const char* name, F&& f) {
  TimedCall timed(name);
  return f();
}

/// Every call made so far through a timed table, and every add_call_time, the largest total first.
std::vector<DriverCallTime> driver_call_times();

/// Forgets the totals (for the tests).
void reset_driver_call_times();

/// The totals as a table, one call a line: "call calls total_ms max_ms over_1ms", tab-separated.
std::string driver_call_times_tsv(const std::vector<DriverCallTime>& times);

/// Where a worker of `device` writes its totals, in the folder AUTOKERNEL_DRIVER_TIMES names
/// ("" when it is not set).
std::string driver_call_times_path(int device);

}  // namespace ak
