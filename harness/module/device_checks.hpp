#pragma once
/// Checks run on the GPU itself, so that judging an output costs microseconds rather than a
/// download of hundreds of megabytes and a pass over them on the host: a screen of an output
/// against the reference, and a count of the bytes two buffers differ in. The screen is a little
/// stricter than the host's comparison (compare.hpp), never looser: an output it passes, the
/// host would pass; one it does not, the host judges and describes, as before.
#include <map>
#include <memory>

#include "harness/gpu/gpu_context.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

class DeviceChecks {
 public:
  /// Compiles and loads the check kernels (once per worker).
  static Result<std::unique_ptr<DeviceChecks>> open(GpuContext& gpu);

  /// How many of `n` elements of `got` (dtype d) may be outside `tol` of `expected` (fp32).
  /// With `rows` (int32, sampled validation), expected holds only those rows of `row_length`
  /// elements, compacted, and n = rows x row_length.
  Result<uint64_t> suspects(const DeviceBuffer& got, DType d, const DeviceBuffer& expected, int64_t n, Tolerance tol,
                            const DeviceBuffer* rows = nullptr, int64_t row_length = 0) const;

  /// Zero when the first `bytes` bytes of a and b are equal; otherwise how many 4-byte words differ.
  Result<uint64_t> differing_bytes(const DeviceBuffer& a, const DeviceBuffer& b, size_t bytes) const;

  /// Enqueues, without waiting, the comparison of `bytes` bytes at a and b: `tag` | the offset of
  /// the first differing byte is written to the 64-bit `slot` (atomic minimum; set it to ~0 first).
  Status first_change_into(CUdeviceptr a, CUdeviceptr b, size_t bytes, CUdeviceptr slot, uint64_t tag = 0) const;
  /// A keyed 64-bit fingerprint of the whole buffer: equal buffers give equal values, and a
  /// kernel that does not know `key` cannot make two different ones agree.
  Result<uint64_t> fingerprint(const DeviceBuffer& a, uint64_t key) const;
  /// Enqueues, before a candidate's or a best's launch, in one kernel: the poisoning of the shared
  /// memory of every SM, which outlives a launch (seen on an H200: a mark left by one kernel read
  /// back by the next on every SM, across a 256 MiB memset), a place to count launches or to tell
  /// the candidate's stage launches from the best's first; and of the slack of every allocation
  /// `slack` lists (harness/gpu/allocation_slack.hpp).
  Status poison_before_launch(const AllocationSlack* slack) const;
  /// Slack ranges one launch of the poison takes (its parameter holds them).
  static constexpr size_t kSlackRangesPerLaunch = 64;
  /// Enqueues a copy of `bytes` bytes by a kernel (for memory the copy engine will not take).
  Status copy_into(CUdeviceptr from, CUdeviceptr to, size_t bytes) const;
  /// The mangled names of these kernels: a timing tells its candidate's records from theirs.
  const std::vector<std::string>& kernel_names() const { return names_; }

 private:
  std::vector<std::string> names_;
  explicit DeviceChecks(GpuContext& gpu) : gpu_(gpu) {}
  Result<uint64_t> count(CUfunction f, void** params, int64_t n) const;
  GpuContext& gpu_;
  LoadedModule module_;
  std::map<DType, CUfunction> screen_;
  CUfunction diff_ = nullptr;
  CUfunction first_change_ = nullptr;
  CUfunction copy_ = nullptr;
  CUfunction fingerprint_ = nullptr;
  CUfunction poison_ = nullptr;
  DeviceBuffer counter_;
};

}  // namespace ak
