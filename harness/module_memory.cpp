#include "harness/module_memory.hpp"

#include <algorithm>

namespace ak {
namespace {

/// Beyond this the driver's allocation is a pool shared with other modules' memory, not this
/// module's own: the guard then covers the sections and the padding between them.
constexpr size_t kLargestGuardedAllocation = size_t(64) << 20;

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}

}  // namespace

Result<ModuleMemory> ModuleMemory::hold(GpuContext& gpu, const LoadedModule& module, const std::vector<char>& cubin) {
  ModuleMemory m;
  m.d_ = &gpu.driver();
  CUdeviceptr lo = ~CUdeviceptr(0), hi = 0;
  for (WritableSection& w : writable_sections(cubin)) {
    auto anchor = module.address_of(w.anchor);
    if (!anchor)
      return error("the module's writable section " + w.name + " cannot be located (the driver does not give the "
                   "address of " + w.anchor + "), so it cannot be reset between launches: " + anchor.error().message);
    const CUdeviceptr at = *anchor - w.anchor_offset;
    lo = std::min(lo, at);
    hi = std::max(hi, at + w.image.size());
    m.sections_.push_back({at, std::move(w)});
  }
  if (m.sections_.empty()) return m;
  // The driver's allocation around the sections: its tail is padding a kernel could write too.
  CUdeviceptr base = 0;
  size_t size = 0;
  if (gpu.driver().cuMemGetAddressRange(&base, &size, lo) == CUDA_SUCCESS && base <= lo && base + size >= hi &&
      size <= kLargestGuardedAllocation)
    lo = base, hi = base + size;
  m.range_begin_ = lo;
  m.range_bytes_ = size_t(hi - lo);
  auto before = gpu.alloc(m.range_bytes_);
  if (!before) return before.error();
  m.before_ = std::move(*before);
  return m;
}

CUresult ModuleMemory::reset(CUstream s) const {
  for (const Placed& p : sections_)
    if (CUresult e = d_->cuMemcpyHtoDAsync(p.at, p.section.image.data(), p.section.image.size(), s); e != CUDA_SUCCESS)
      return e;
  if (range_bytes_ == 0) return CUDA_SUCCESS;
  return d_->cuMemcpyDtoDAsync(before_.ptr(), range_begin_, range_bytes_, s);
}

Status ModuleMemory::check_into(const DeviceChecks& checks, CUdeviceptr slot) const {
  if (range_bytes_ == 0) return ok();
  return checks.first_change_into(range_begin_, before_.ptr(), range_bytes_, slot);
}

std::string ModuleMemory::describe_change(uint64_t slot_value) const {
  if (slot_value == kNoChange) return "";
  const CUdeviceptr at = range_begin_ + slot_value;
  for (const Placed& p : sections_)
    if (at >= p.at && at < p.at + p.section.image.size())
      return "the kernel left its module memory changed at " + p.section.name + " + " + hex(at - p.at) + " (" +
             p.section.describe(at - p.at) + ")";
  return "the kernel left its module memory changed at byte " + hex(slot_value) + " of the " +
         std::to_string(range_bytes_) + "-byte range the module's memory lies in (padding outside every section)";
}

}  // namespace ak
