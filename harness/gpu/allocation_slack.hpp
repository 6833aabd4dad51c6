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
#include <deque>
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

  /// Freed allocations kept for the next of the same span. A stage case allocates and frees its
  /// buffers, and a verdict repeats the same cases: without reuse a verdict makes hundreds of
  /// cuMemAlloc/cuMemFree calls, and each waits in the kernel driver while another GPU of the box
  /// reads counters (CUPTI's range profiler holds it): beside three profiling GPUs, 738 of each
  /// in twelve verdicts took 3.05 s against 0.23 s alone. Bounded (kKeptSpanBytes each,
  /// kKeptBytes together; the longest kept go first), so memory does not grow. While kept, all of
  /// it is among ranges(), poisoned before every launch (about 0.15 ms for a full 512 MiB on an
  /// H200, which is why the timed launches run with none kept: GpuContext::release_kept); once
  /// taken, its next user overwrites what it held (inputs drawn, outputs poisoned, copies
  /// written) before any launch. 0 when none is kept for `span`.
  CUdeviceptr take_kept(size_t span);
  /// Keeps `at` (`span` bytes) for reuse. Returns the allocations the caller must free now:
  /// `at` itself when it is too large to keep, else those pushed out to stay within the bound.
  std::vector<CUdeviceptr> keep(CUdeviceptr at, size_t span);
  /// Hands every kept allocation over, to be freed (the context is going away, or an allocation
  /// needs the memory).
  std::vector<CUdeviceptr> drain_kept();
  static constexpr size_t kKeptSpanBytes = size_t(256) << 20;
  static constexpr size_t kKeptBytes = size_t(512) << 20;
  /// Where each live allocation's slack starts, and its bytes, and every kept allocation whole:
  /// what to poison before a launch.
  std::vector<std::pair<CUdeviceptr, size_t>> ranges() const;
  /// How many allocations have slack to poison (for the tests and the log).
  size_t with_slack() const;

 private:
  struct Span {
    size_t used = 0, span = 0;
  };
  mutable std::mutex mutex_;
  std::map<CUdeviceptr, Span> live_;
  struct Kept {
    CUdeviceptr at = 0;
    size_t span = 0;
  };
  std::deque<Kept> kept_;   ///< in the order kept: the front goes first
  size_t kept_bytes_ = 0;
};

}  // namespace ak
