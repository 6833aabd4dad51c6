#include "harness/module/module_memory.hpp"

#include <algorithm>

namespace ak {
namespace {

/// Variables spread wider than this are not one block of the driver's: refused.
constexpr size_t kLargestGuardedRange = size_t(16) << 20;

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}

}  // namespace

Result<ModuleMemory> ModuleMemory::hold(GpuContext& gpu, const LoadedModule& module, const std::vector<char>& cubin) {
  ModuleMemory m;
  m.d_ = &gpu.driver();
  std::vector<char> images;
  for (const WritableSection& w : writable_sections(cubin))
    for (const SectionSymbol& sym : w.symbols) {
      if (sym.size == 0 || sym.offset + sym.size > w.image.size()) continue;
      auto at = module.address_of(sym.name);
      if (!at)
        return error("the module's " + (sym.name.empty() ? std::string("unnamed variable") : sym.name) + " in " + w.name +
                     " cannot be located (the driver does not give its address), so it cannot be reset between "
                     "launches: " + at.error().message);
      m.variables_.push_back({*at, size_t(sym.size), images.size(), sym.name, w.name});
      images.insert(images.end(), w.image.begin() + long(sym.offset), w.image.begin() + long(sym.offset + sym.size));
    }
  if (m.variables_.empty()) return m;
  std::sort(m.variables_.begin(), m.variables_.end(), [](auto& a, auto& b) { return a.at < b.at; });
  auto dev_images = gpu.alloc(images.size());
  if (!dev_images) return dev_images.error();
  m.images_ = std::move(*dev_images);
  if (auto s = gpu.upload(m.images_, images.data(), images.size()); !s) return s.error();
  CUdeviceptr hi = 0;
  for (const Variable& v : m.variables_) hi = std::max(hi, v.at + v.bytes);
  // The driver packs every module's variables into shared pages of its allocation granularity
  // (2 MiB on Hopper: each module 512 bytes on from the last), and the rest of such a page is
  // writable and belongs to no variable of this module. The guarded range is those whole pages:
  // a byte the kernel changes anywhere in them, its own variables, their padding, another
  // module's variables or the free rest, fails it. A page mapped for one variable is readable
  // whole, so the harness's own kernels never touch unmapped memory.
  const CUdeviceptr page = std::max<size_t>(gpu.info().allocation_granularity, 4096);
  m.range_begin_ = m.variables_.front().at / page * page;
  m.range_bytes_ = size_t((hi + page - 1) / page * page - m.range_begin_);
  if (m.range_bytes_ > kLargestGuardedRange)
    return error("the module's writable variables lie " + std::to_string(m.range_bytes_ >> 20) +
                 " MiB apart on the device, too far to be checked between launches");
  auto before = gpu.alloc(m.range_bytes_);
  if (!before) return before.error();
  m.before_ = std::move(*before);
  if (CUresult r = m.restore(nullptr); r != CUDA_SUCCESS)
    return error("the module's variables cannot be written back to their image (" + cu_error_text(r) + ")");
  return m;
}

CUresult ModuleMemory::restore(CUstream s) const {
  for (const Variable& v : variables_)
    if (CUresult e = d_->cuMemcpyDtoDAsync(v.at, images_.ptr() + v.image_at, v.bytes, s); e != CUDA_SUCCESS) return e;
  return CUDA_SUCCESS;
}

Status ModuleMemory::snapshot(const DeviceChecks& checks) const {
  if (range_bytes_ == 0) return ok();
  return checks.copy_into(range_begin_, before_.ptr(), range_bytes_);
}

Status ModuleMemory::check_into(const DeviceChecks& checks, CUdeviceptr slot) const {
  if (range_bytes_ == 0) return ok();
  return checks.first_change_into(range_begin_, before_.ptr(), range_bytes_, slot);
}

std::string ModuleMemory::describe_change(uint64_t slot_value) const {
  if (slot_value == kNoChange) return "";
  const CUdeviceptr at = range_begin_ + slot_value;
  const Variable* below = nullptr;
  for (const Variable& v : variables_) {
    if (at >= v.at && at < v.at + v.bytes)
      return "the kernel left its module memory changed at " + (v.name.empty() ? "an unnamed variable" : v.name) +
             (at > v.at ? " + " + hex(at - v.at) : "") + " (" + v.section + ")";
    if (v.at <= at) below = &v;
  }
  // The driver gives a module's variables 256-byte slots: past that, the byte is another
  // module's or nobody's, in the page the driver shares between modules.
  const bool own_padding = below && at - below->at < ((below->bytes + 255) / 256) * 256;
  return "the kernel left its module memory changed at byte " + hex(slot_value) + " of the " +
         std::to_string(range_bytes_) + "-byte range its variables lie in: " +
         (own_padding ? "padding after " + (below->name.empty() ? std::string("an unnamed variable") : below->name) + " + " +
                            hex(at - below->at - below->bytes)
                      : std::string("outside its own variables, in the driver's page of module memory (another module's "
                                    "variables or free space)"));
}

}  // namespace ak
