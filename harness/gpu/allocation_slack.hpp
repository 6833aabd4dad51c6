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

  /// Freed allocations kept for the next of the same span: a stage case allocates and frees a
  /// handful of small buffers, and a fresh 2 MiB page costs far more than a sub-allocated slot
  /// did. Bounded (kKeptSpanBytes each, kKeptBytes together), so memory does not grow. While kept,
  /// all of it is among ranges(), poisoned before every launch; once taken, its next user
  /// overwrites what it held (inputs drawn, outputs poisoned, copies written) before any launch.
  /// 0 when none is kept for `span`.
  CUdeviceptr take_kept(size_t span);
  /// Keeps `at` (`span` bytes) for reuse; false when over the bounds (free it then).
  bool keep(CUdeviceptr at, size_t span);
  /// Hands every kept allocation over, to be freed (the context is going away).
  std::vector<CUdeviceptr> drain_kept();
  static constexpr size_t kKeptSpanBytes = size_t(8) << 20;
  static constexpr size_t kKeptBytes = size_t(32) << 20;
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
  std::multimap<size_t, CUdeviceptr> kept_;   ///< span -> a freed allocation of that span
  size_t kept_bytes_ = 0;
};

}  // namespace ak
