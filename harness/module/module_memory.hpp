#pragma once
/// The writable global memory of one loaded module, held to its image so that no launch can
/// leave anything for the next. The driver places each variable of the module's writable
/// sections itself (not as the cubin lays its sections out), so each is located by its own symbol
/// and written back to the image the cubin gives it before every launch (restore). The range they
/// lie in on the device — the variables, the padding the driver leaves between them, and the rest
/// of the pages of the allocation granularity they lie in, which the driver shares between every
/// module's variables — is copied aside by a kernel just before the launch (snapshot:
/// the copy engine refuses ranges that are not one allocation) and compared with that copy after
/// it (check_into). A kernel that leaves any byte changed fails, and the verdict names the
/// variable or the padding. So the exported op, which writes nothing back, behaves exactly as the
/// judged kernel did.
#include <string>
#include <vector>

#include "harness/compile/module_state.hpp"
#include "harness/gpu/gpu_context.hpp"
#include "harness/module/device_checks.hpp"

namespace ak {

class ModuleMemory {
 public:
  /// Locates every variable of the writable sections of `cubin` in the loaded `module`. An Error
  /// when one cannot be located (the driver does not give its address).
  static Result<ModuleMemory> hold(GpuContext& gpu, const LoadedModule& module, const std::vector<char>& cubin);

  /// Enqueues on `s` the write-back of every variable to its image.
  CUresult restore(CUstream s) const;
  /// Enqueues on the default stream the copy of the guarded range, before a launch.
  Status snapshot(const DeviceChecks& checks) const;
  /// Enqueues on the default stream the comparison of the guarded range with the snapshot, after
  /// a launch: the first changed byte's offset is written to `slot` (a 64-bit word set to
  /// kNoChange before).
  Status check_into(const DeviceChecks& checks, CUdeviceptr slot) const;
  /// "" for kNoChange; else which variable, or the padding after which variable, changed.
  std::string describe_change(uint64_t slot_value) const;

  size_t guarded_bytes() const { return range_bytes_; }
  static constexpr uint64_t kNoChange = ~uint64_t(0);

 private:
  /// One variable where the driver put it; its image lies at `images_ + image_at`.
  struct Variable {
    CUdeviceptr at = 0;
    size_t bytes = 0, image_at = 0;
    std::string name, section;
  };
  const CudaDriver* d_ = nullptr;
  std::vector<Variable> variables_;   ///< by address
  DeviceBuffer images_;               ///< every variable's initial bytes, back to back
  CUdeviceptr range_begin_ = 0;
  size_t range_bytes_ = 0;
  DeviceBuffer before_;               ///< the range as the snapshot found it
};

}  // namespace ak
