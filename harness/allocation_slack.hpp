#pragma once
/// The slack of the worker's device allocations: the bytes between the end of what a buffer was
/// asked for and the end of the whole pages the driver gave it. The driver packs small
/// allocations into shared 2 MiB pages (a 4-byte buffer's neighbour starts 512 bytes on, and the
/// bytes between belong to no one), so every harness allocation is made in whole pages of the
/// allocation granularity and listed here; before every launch of a candidate or a best, the
/// slack of every live allocation is written over with the poison byte
/// (DeviceChecks::poison_before_launch). Nothing a kernel leaves there, in any buffer it can
/// reach, survives to its next launch.
#include <cuda.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace ak {

/// `bytes` rounded up to whole pages of `granularity` (at least one page).
size_t whole_pages(size_t bytes, size_t granularity);

class AllocationSlack {
 public:
  /// An allocation of `span` bytes at `at`, of which the first `used` are its operand.
  void add(CUdeviceptr at, size_t used, size_t span);
  void remove(CUdeviceptr at);
  /// Where each live allocation's slack starts, and its bytes: what to poison before a launch.
  std::vector<std::pair<CUdeviceptr, size_t>> ranges() const;
  /// How many allocations have slack to poison (for the tests and the log).
  size_t with_slack() const;

 private:
  struct Span {
    size_t used = 0, span = 0;
  };
  mutable std::mutex mutex_;
  std::map<CUdeviceptr, Span> live_;
};

}  // namespace ak
