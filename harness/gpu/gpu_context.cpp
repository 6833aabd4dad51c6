#include "harness/gpu/gpu_context.hpp"

#include "harness/compile/nvrtc_compile.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace ak {

DeviceBuffer::DeviceBuffer(const CudaDriver* d, CUdeviceptr p, size_t bytes, size_t span,
                           std::shared_ptr<AllocationSlack> slack)
    : d_(d), ptr_(p), bytes_(bytes), span_(std::max(span, bytes)), slack_(std::move(slack)) {
  if (slack_ && ptr_) slack_->add(ptr_, bytes_, span_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(d_, o.d_);
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  std::swap(span_, o.span_);
  std::swap(slack_, o.slack_);
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (slack_ && ptr_) slack_->remove(ptr_);
  if (!d_ || !ptr_) return;
  if (!slack_) {
    d_->cuMemFree(ptr_);
    return;
  }
  for (CUdeviceptr p : slack_->keep(ptr_, span_)) d_->cuMemFree(p);
}

LoadedModule& LoadedModule::operator=(LoadedModule&& o) noexcept {
  std::swap(d_, o.d_);
  std::swap(m_, o.m_);
  return *this;
}

LoadedModule::~LoadedModule() {
  if (d_ && m_) d_->cuModuleUnload(m_);
}

Result<CUfunction> LoadedModule::function(const std::string& lowered_name) const {
  CUfunction f = nullptr;
  if (auto s = cu_check(d_->cuModuleGetFunction(&f, m_, lowered_name.c_str()),
                        "looking up " + lowered_name + " in the module");
      !s)
    return s.error();
  return f;
}

Result<CUdeviceptr> LoadedModule::address_of(const std::string& symbol) const {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  if (auto s = cu_check(d_->cuModuleGetGlobal(&p, &bytes, m_, symbol.c_str()), "finding " + symbol + " in the module"); !s)
    return s.error();
  return p;
}

Result<std::optional<int>> LoadedModule::read_int(const std::string& symbol) const {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  CUresult r = d_->cuModuleGetGlobal(&p, &bytes, m_, symbol.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return std::optional<int>{};
  if (auto s = cu_check(r, "reading the module's " + symbol); !s) return s.error();
  if (bytes != sizeof(int))
    return error(symbol + " is " + std::to_string(bytes) + " bytes: declare it as extern \"C\" __constant__ int");
  int v = 0;
  if (auto s = cu_check(d_->cuMemcpyDtoH(&v, p, sizeof v), "reading " + symbol); !s) return s.error();
  return std::optional<int>{v};
}

Result<std::optional<std::vector<int>>> LoadedModule::read_ints(const std::string& symbol) const {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  CUresult r = d_->cuModuleGetGlobal(&p, &bytes, m_, symbol.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return std::optional<std::vector<int>>{};
  if (auto s = cu_check(r, "reading the module's " + symbol); !s) return s.error();
  if (bytes % sizeof(int) || bytes > 4096)
    return error(symbol + " is " + std::to_string(bytes) + " bytes: declare it as an extern \"C\" __constant__ int array");
  std::vector<int> v(bytes / sizeof(int));
  if (auto s = cu_check(d_->cuMemcpyDtoH(v.data(), p, bytes), "reading " + symbol); !s) return s.error();
  return std::optional<std::vector<int>>{std::move(v)};
}

Result<std::optional<std::string>> LoadedModule::read_text(const std::string& symbol, size_t max_bytes) const {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  CUresult r = d_->cuModuleGetGlobal(&p, &bytes, m_, symbol.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return std::optional<std::string>{};
  if (auto s = cu_check(r, "reading the module's " + symbol); !s) return s.error();
  if (bytes > max_bytes + 1)   // the text and its NUL
    return error(symbol + " is " + std::to_string(bytes) + " bytes: expected at most " + std::to_string(max_bytes));
  std::string v(bytes, '\0');
  if (auto s = cu_check(d_->cuMemcpyDtoH(v.data(), p, bytes), "reading " + symbol); !s) return s.error();
  v.resize(std::min(v.find('\0'), v.size()));
  return std::optional<std::string>{std::move(v)};
}

Result<std::unique_ptr<GpuContext>> GpuContext::open(int index) {
  auto drv = cuda_driver();
  if (!drv) return drv.error();
  const CudaDriver& d = **drv;
  int count = 0;
  if (auto s = cu_check(d.cuDeviceGetCount(&count), "counting GPUs"); !s) return s.error();
  if (count == 0) return error("no GPU: the NVIDIA driver is installed but sees no device");
  if (index < 0 || index >= count)
    return error("GPU " + std::to_string(index) + " does not exist: this machine has " +
                 std::to_string(count) + " (set [gpu] device from 0 to " + std::to_string(count - 1) + ")");
  std::unique_ptr<GpuContext> g(new GpuContext());
  g->d_ = &d;
  if (auto s = cu_check(d.cuDeviceGet(&g->dev_, index), "opening GPU " + std::to_string(index)); !s)
    return s.error();
  if (auto s = cu_check(d.cuDevicePrimaryCtxRetain(&g->ctx_, g->dev_), "creating a CUDA context"); !s)
    return s.error();
  if (auto s = cu_check(d.cuCtxSetCurrent(g->ctx_), "making the CUDA context current"); !s) return s.error();
  // No device heap: a candidate's malloc() gets nothing, so it cannot keep memory across launches
  // (module_state.hpp refuses the call before anything runs; this is the second line).
  if (auto s = cu_check(d.cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 0), "setting the device heap to 0 bytes"); !s)
    spdlog::warn("{}: a candidate's device malloc would get the default heap", s.error().message);
  GpuInfo& i = g->info_;
  i.index = index;
  char name[256] = {};
  d.cuDeviceGetName(name, sizeof name, g->dev_);
  i.name = name;
  int l2 = 0;
  d.cuDeviceGetAttribute(&i.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev_);
  d.cuDeviceGetAttribute(&i.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev_);
  d.cuDeviceGetAttribute(&i.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev_);
  d.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, g->dev_);
  d.cuDeviceGetAttribute(&i.shared_bytes_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, g->dev_);
  i.l2_bytes = size_t(l2);
  d.cuDeviceTotalMem(&i.total_bytes, g->dev_);
  i.arch = arch_for(i.cc_major, i.cc_minor);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = index;
  if (auto s = cu_check(d.cuMemGetAllocationGranularity(&i.allocation_granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                        "asking the driver for its allocation granularity (every harness buffer is made of whole pages of it)");
      !s)
    return s.error();
  return g;
}

GpuContext::~GpuContext() {
  release_kept();
  if (ctx_) d_->cuDevicePrimaryCtxRelease(dev_);
}

Result<DeviceBuffer> GpuContext::alloc(size_t bytes) {
  CUdeviceptr p = 0;
  const size_t span = whole_pages(bytes, info_.allocation_granularity);
  if (CUdeviceptr kept = slack_->take_kept(span)) return DeviceBuffer(d_, kept, bytes, span, slack_);
  CUresult r = d_->cuMemAlloc(&p, span);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    // The kept allocations are the harness's own reserve: they go before a case is refused.
    if (release_kept() > 0) r = d_->cuMemAlloc(&p, span);
  }
  if (auto s = cu_check(r, "allocating " + std::to_string(bytes >> 20) + " MiB on the GPU"); !s) {
    Error e = s.error();
    e.harness = true;  // the harness asked for it: whatever the candidate is, it did not cause this
    e.message += " (the harness's own failure, not the candidate's: " + std::to_string(used_bytes() >> 20) +
                 " MiB of the GPU are in use)";
    return e;
  }
  return DeviceBuffer(d_, p, bytes, span, slack_);
}

size_t GpuContext::release_kept() {
  const auto kept = slack_->drain_kept();
  for (CUdeviceptr p : kept) d_->cuMemFree(p);
  return kept.size();
}

Status GpuContext::upload(const DeviceBuffer& dst, const void* src, size_t bytes) {
  return cu_check(d_->cuMemcpyHtoD(dst.ptr(), src, bytes), "copying inputs to the GPU");
}

Status GpuContext::download(void* dst, const DeviceBuffer& src, size_t bytes) {
  return cu_check(d_->cuMemcpyDtoH(dst, src.ptr(), bytes), "copying results from the GPU");
}

Result<LoadedModule> GpuContext::load(const std::vector<char>& cubin) {
  CUmodule m = nullptr;
  if (auto s = cu_check(d_->cuModuleLoadData(&m, cubin.data()), "loading the compiled module"); !s)
    return s.error();
  return LoadedModule(d_, m);
}

size_t GpuContext::used_bytes() const {
  size_t free_b = 0, total = 0;
  d_->cuMemGetInfo(&free_b, &total);
  return total - free_b;
}

}  // namespace ak
