#pragma once
/// One GPU, its primary context, device memory and loaded modules. Lives only in the worker
/// process: a candidate that breaks the context takes this object down with it, never the daemon.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "harness/gpu/allocation_slack.hpp"
#include "harness/gpu/cuda_driver.hpp"

namespace ak {

struct GpuInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t total_bytes = 0;
  size_t l2_bytes = 0;
  std::string arch;   ///< what NVRTC compiles for, e.g. sm_90a
  /// The driver's page for device memory (2 MiB on Hopper): every allocation is made of whole
  /// pages of it, so that no two allocations share one (harness/gpu/allocation_slack.hpp).
  size_t allocation_granularity = 0;
  int shared_bytes_per_block = 0;   ///< the most shared memory one block may ask for (opt-in)
};

/// Device memory, freed on destruction: `bytes` asked for, in an allocation of `span` bytes whose
/// slack (listed in `slack`, when given) the harness poisons before every launch.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const CudaDriver* d, CUdeviceptr p, size_t bytes, size_t span = 0,
               std::shared_ptr<AllocationSlack> slack = nullptr);
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  ~DeviceBuffer();
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  /// The whole allocation: bytes() and the slack after it.
  size_t span() const { return span_; }

 private:
  const CudaDriver* d_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0, span_ = 0;
  std::shared_ptr<AllocationSlack> slack_;
};

/// A cubin loaded into the context, with its functions looked up by lowered name.
class LoadedModule {
 public:
  LoadedModule() = default;
  LoadedModule(const CudaDriver* d, CUmodule m) : d_(d), m_(m) {}
  LoadedModule(LoadedModule&& o) noexcept { *this = std::move(o); }
  LoadedModule& operator=(LoadedModule&& o) noexcept;
  ~LoadedModule();
  Result<CUfunction> function(const std::string& lowered_name) const;
  /// The device address of a module variable.
  Result<CUdeviceptr> address_of(const std::string& symbol) const;
  /// Reads an exported `__constant__ int`; nullopt when the module does not define it.
  Result<std::optional<int>> read_int(const std::string& symbol) const;
  /// Reads an exported `__constant__ int` array whole; nullopt when the module does not define it.
  Result<std::optional<std::vector<int>>> read_ints(const std::string& symbol) const;
  /// Reads an exported `__constant__ char` array up to its first NUL (the whole array when it has
  /// none); nullopt when the module does not define it; an error when it is over `max_bytes`.
  Result<std::optional<std::string>> read_text(const std::string& symbol, size_t max_bytes) const;

 private:
  const CudaDriver* d_ = nullptr;
  CUmodule m_ = nullptr;
};

class GpuContext {
 public:
  /// Opens device `index`; an Error says why not (no driver, no such device).
  static Result<std::unique_ptr<GpuContext>> open(int index);
  ~GpuContext();

  const GpuInfo& info() const { return info_; }
  const CudaDriver& driver() const { return *d_; }
  /// The context and device, for APIs that take them (CUPTI's profiler, the occupancy calculator).
  CUcontext context() const { return ctx_; }
  CUdevice device() const { return dev_; }

  /// `bytes` of device memory in whole pages of the allocation granularity, its slack listed in
  /// slack(). An allocation failure is the harness's (Error::harness), never a candidate's.
  Result<DeviceBuffer> alloc(size_t bytes);
  /// Frees the allocations kept for reuse. Before a stage of hundreds of launches (the timed
  /// ones): kept memory is poisoned before each launch, and there it would cost more than the
  /// driver calls it saves. Returns how many were freed.
  size_t release_kept();
  /// Every live allocation's slack, to poison before a launch.
  const std::shared_ptr<AllocationSlack>& slack() const { return slack_; }
  Status upload(const DeviceBuffer& dst, const void* src, size_t bytes);
  Status download(void* dst, const DeviceBuffer& src, size_t bytes);
  Result<LoadedModule> load(const std::vector<char>& cubin);
  /// Device memory in use right now (total - free), in bytes.
  size_t used_bytes() const;

 private:
  GpuContext() = default;
  const CudaDriver* d_ = nullptr;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  GpuInfo info_;
  std::shared_ptr<AllocationSlack> slack_ = std::make_shared<AllocationSlack>();
};

}  // namespace ak
