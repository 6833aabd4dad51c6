#pragma once
/// One GPU, its primary context, device memory and loaded modules. Lives only in the worker
/// process: a candidate that breaks the context takes this object down with it, never the daemon.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "harness/cuda_driver.hpp"

namespace ak {

struct GpuInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t total_bytes = 0;
  size_t l2_bytes = 0;
  std::string arch;   ///< what NVRTC compiles for, e.g. sm_90a
};

/// Device memory, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const CudaDriver* d, CUdeviceptr p, size_t bytes) : d_(d), ptr_(p), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  ~DeviceBuffer();
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  const CudaDriver* d_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
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

  Result<DeviceBuffer> alloc(size_t bytes);
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
};

}  // namespace ak
