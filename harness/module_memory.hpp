#pragma once
/// The writable global memory of one loaded module, held to its image so that no launch can
/// leave anything for the next: before every launch each writable section is written back to
/// the image the cubin gives it, and the whole range the module's memory lies in (the sections,
/// the padding between and after them, as far as the driver's allocation reaches) is copied
/// aside; after the launch the range is compared with that copy on the GPU. A kernel that leaves
/// any byte changed fails, and the verdict names the place. So the exported op, which writes
/// nothing back, behaves exactly as the judged kernel did. Which range the driver lets the harness
/// copy is tried once at load: its allocation around the sections, else the sections with the
/// padding between them, else each section alone (guarded_by() says which).
#include <string>
#include <vector>

#include "harness/device_checks.hpp"
#include "harness/gpu_context.hpp"
#include "harness/module_state.hpp"

namespace ak {

class ModuleMemory {
 public:
  /// Locates the writable sections of `cubin` in the loaded `module`. An Error when a section
  /// cannot be located (the driver does not give its anchor's address).
  static Result<ModuleMemory> hold(GpuContext& gpu, const LoadedModule& module, const std::vector<char>& cubin);

  /// Enqueues on `s`: every section back to its image, then the guarded range copied aside.
  CUresult reset(CUstream s) const;
  /// Enqueues on the default stream the comparison of the guarded range with its copy: the byte
  /// offset of the first change is written to `slot` (a 64-bit word set to kNoChange before).
  Status check_into(const DeviceChecks& checks, CUdeviceptr slot) const;
  /// "" for kNoChange; else which section, offset and variable (or padding) the kernel wrote.
  std::string describe_change(uint64_t slot_value) const;

  size_t guarded_bytes() const;
  /// "the driver's allocation", "the sections and the padding between them", "each section".
  const std::string& guarded_by() const { return guarded_by_; }
  static constexpr uint64_t kNoChange = ~uint64_t(0);

 private:
  struct Placed {
    CUdeviceptr at = 0;
    WritableSection section;
  };
  /// A range compared after each launch with its copy at `before_ + copy_at`.
  struct Region {
    CUdeviceptr begin = 0;
    size_t bytes = 0, copy_at = 0;
  };
  /// Sets `regions_` and `before_` when the driver copies every region; false when it refuses.
  bool try_guard(GpuContext& gpu, std::vector<Region> regions);
  /// Sets `restores_`: each section's image in one copy, or variable by variable where the
  /// driver refuses a copy that spans the padding (the check still covers the padding).
  Status plan_restores();
  const CudaDriver* d_ = nullptr;
  std::vector<Placed> sections_;
  std::vector<Region> regions_;
  struct Restore {
    CUdeviceptr at = 0;
    const char* bytes = nullptr;
    size_t size = 0;
  };
  std::vector<Restore> restores_;   ///< points into sections_' images
  std::string guarded_by_;
  DeviceBuffer before_;   ///< the regions as they were before the launch
};

}  // namespace ak
