#include "harness/module_memory.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

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

Status ModuleMemory::plan_restores() {
  for (const Placed& p : sections_) {
    const WritableSection& w = p.section;
    if (d_->cuMemcpyHtoD(p.at, w.image.data(), w.image.size()) == CUDA_SUCCESS) {
      restores_.push_back({p.at, w.image.data(), w.image.size()});
      continue;
    }
    for (const SectionSymbol& sym : w.symbols) {
      if (sym.size == 0 || sym.offset + sym.size > w.image.size()) continue;
      if (CUresult r = d_->cuMemcpyHtoD(p.at + sym.offset, w.image.data() + sym.offset, sym.size); r != CUDA_SUCCESS)
        return error("the driver refuses to write " + (sym.name.empty() ? std::string("a variable") : sym.name) + " of " +
                     w.name + " back to its image (" + cu_error_text(r) + "), so it cannot be reset between launches");
      restores_.push_back({p.at + sym.offset, w.image.data() + sym.offset, sym.size});
    }
  }
  return ok();
}

bool ModuleMemory::try_guard(GpuContext& gpu, std::vector<Region> regions) {
  size_t total = 0;
  for (Region& r : regions) r.copy_at = total, total += r.bytes;
  auto before = gpu.alloc(total);
  if (!before) return false;
  for (const Region& r : regions)
    if (d_->cuMemcpyDtoD(before->ptr() + r.copy_at, r.begin, r.bytes) != CUDA_SUCCESS) return false;
  regions_ = std::move(regions);
  before_ = std::move(*before);
  return true;
}

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
  if (auto s = m.plan_restores(); !s) return s.error();
  // The driver's allocation around the sections: its tail is padding a kernel could write too.
  CUdeviceptr base = 0;
  size_t size = 0;
  std::vector<Region> each;
  for (const Placed& p : m.sections_) each.push_back({p.at, p.section.image.size(), 0});
  const bool allocation = gpu.driver().cuMemGetAddressRange(&base, &size, lo) == CUDA_SUCCESS && base <= lo &&
                          base + size >= hi && size <= kLargestGuardedAllocation;
  if (allocation && m.try_guard(gpu, {{base, size, 0}})) m.guarded_by_ = "the driver's allocation";
  else if (m.try_guard(gpu, {{lo, size_t(hi - lo), 0}})) m.guarded_by_ = "the sections and the padding between them";
  else if (m.try_guard(gpu, each)) m.guarded_by_ = "each section";
  else return error("the driver refuses to copy the module's writable memory, so it cannot be checked between launches");
  static bool said = false;   // once per worker: what this driver allows
  if (!said) spdlog::info("module memory guarded by {} ({} bytes){}", m.guarded_by_, m.guarded_bytes(),
                          m.restores_.size() > m.sections_.size() ? ", written back variable by variable" : "");
  said = true;
  return m;
}

size_t ModuleMemory::guarded_bytes() const {
  size_t n = 0;
  for (const Region& r : regions_) n += r.bytes;
  return n;
}

CUresult ModuleMemory::reset(CUstream s) const {
  for (const Restore& r : restores_)
    if (CUresult e = d_->cuMemcpyHtoDAsync(r.at, r.bytes, r.size, s); e != CUDA_SUCCESS) return e;
  for (const Region& r : regions_)
    if (CUresult e = d_->cuMemcpyDtoDAsync(before_.ptr() + r.copy_at, r.begin, r.bytes, s); e != CUDA_SUCCESS) return e;
  return CUDA_SUCCESS;
}

Status ModuleMemory::check_into(const DeviceChecks& checks, CUdeviceptr slot) const {
  // The slot ends up holding the smallest (region, offset): region in the top 16 bits.
  for (size_t i = 0; i < regions_.size(); ++i)
    if (auto s = checks.first_change_into(regions_[i].begin, before_.ptr() + regions_[i].copy_at, regions_[i].bytes, slot,
                                          uint64_t(i) << 48);
        !s)
      return s;
  return ok();
}

std::string ModuleMemory::describe_change(uint64_t slot_value) const {
  if (slot_value == kNoChange) return "";
  const size_t region = size_t(slot_value >> 48);
  if (region >= regions_.size()) return "the kernel left its module memory changed (an unreadable check result)";
  const CUdeviceptr at = regions_[region].begin + (slot_value & ((uint64_t(1) << 48) - 1));
  for (const Placed& p : sections_)
    if (at >= p.at && at < p.at + p.section.image.size())
      return "the kernel left its module memory changed at " + p.section.name + " + " + hex(at - p.at) + " (" +
             p.section.describe(at - p.at) + ")";
  return "the kernel left its module memory changed at byte " + hex(at - regions_[region].begin) + " of the " +
         std::to_string(regions_[region].bytes) + "-byte range " + guarded_by_ + " covers (outside every section)";
}

}  // namespace ak
