#include "harness/gpu/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "harness/gpu/driver_call_times.hpp"

namespace ak {
namespace {

#define AK_STR(x) #x
#define AK_XSTR(x) AK_STR(x)

Result<const CudaDriver*> load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return error(std::string("no NVIDIA driver: libcuda.so.1 could not be loaded (") + dlerror() +
                 "). GPU commands (run, bench, worker) need a machine with an NVIDIA GPU and its "
                 "driver; config check, compile and kernels work without one");
  // Each function is looked up under the exact name cuda.h's macros give it (cuMemAlloc ->
  // cuMemAlloc_v2), so the symbol's ABI is the prototype we call it with. cuGetProcAddress with
  // CUDA_VERSION would hand back the newest ABI instead, which for some functions takes other
  // arguments (cuCtxSynchronize in CUDA 13 takes a context).
  static CudaDriver d;
  std::string missing;
#define AK_LOAD(name)                                                       \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, AK_XSTR(name)));   \
  if (!d.name) missing += std::string(missing.empty() ? "" : ", ") + AK_XSTR(name);
  AK_DRIVER_FUNCTIONS(AK_LOAD)
#undef AK_LOAD
  if (!missing.empty())
    return error("the NVIDIA driver lacks " + missing + " (install a driver for CUDA " +
                 std::to_string(CUDA_VERSION / 1000) + " or newer)");
  if (const char* timed = std::getenv("AUTOKERNEL_DRIVER_TIMES"); timed && *timed) time_driver_calls(d);
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(r, &name);
    return error(std::string("no usable GPU: cuInit failed with ") + (name ? name : "?") +
                 " (is the GPU visible to this process? CUDA_VISIBLE_DEVICES, container flags)");
  }
  return &d;
}

}  // namespace

std::string missing_driver_symbols(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::string("cannot load ") + path + ": " + dlerror();
  std::string missing;
#define AK_CHECK(name) \
  if (!dlsym(lib, AK_XSTR(name))) missing += std::string(missing.empty() ? "" : ", ") + AK_XSTR(name);
  AK_DRIVER_FUNCTIONS(AK_CHECK)
#undef AK_CHECK
  dlclose(lib);
  return missing;
}

Result<const CudaDriver*> cuda_driver() {
  static const Result<const CudaDriver*> loaded = load();
  return loaded;
}

Result<std::vector<std::string>> gpu_models() {
  auto d = cuda_driver();
  if (!d) return d.error();
  if (auto s = cu_check((*d)->cuInit(0), "cuInit"); !s) return s.error();
  int count = 0;
  if (auto s = cu_check((*d)->cuDeviceGetCount(&count), "cuDeviceGetCount"); !s) return s.error();
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    char name[256] = {0};
    if (auto s = cu_check((*d)->cuDeviceGet(&dev, i), "cuDeviceGet(" + std::to_string(i) + ")"); !s) return s.error();
    if (auto s = cu_check((*d)->cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName"); !s) return s.error();
    out.push_back(name);
  }
  return out;
}

std::string cu_error_text(CUresult r) {
  auto d = cuda_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.ok()) {
    (*d)->cuGetErrorName(r, &name);
    (*d)->cuGetErrorString(r, &text);
  }
  return std::string(name ? name : "CUDA error " + std::to_string(int(r))) +
         (text ? std::string(" (") + text + ")" : "");
}

bool cu_error_is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

Status cu_check(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return ok();
  return error(what + " failed: " + cu_error_text(r));
}

}  // namespace ak
