#include "harness/cuda_driver.hpp"

#include <dlfcn.h>

namespace ak {
namespace {

Result<const CudaDriver*> load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return error(std::string("no NVIDIA driver: libcuda.so.1 could not be loaded (") + dlerror() +
                 "). GPU commands (run, bench, worker) need a machine with an NVIDIA GPU and its "
                 "driver; config check, compile and kernels work without one");
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get)
    return error("the NVIDIA driver is too old: cuGetProcAddress_v2 is missing (install a driver "
                 "for CUDA " + std::to_string(CUDA_VERSION / 1000) + " or newer)");
  static CudaDriver d;
  std::string missing;
#define AK_LOAD(name)                                                                        \
  {                                                                                          \
    void* p = nullptr;                                                                       \
    CUdriverProcAddressQueryResult status;                                                   \
    if (get(#name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || \
        !p)                                                                                  \
      missing += std::string(missing.empty() ? "" : ", ") + #name;                           \
    d.name = reinterpret_cast<decltype(d.name)>(p);                                          \
  }
  AK_DRIVER_FUNCTIONS(AK_LOAD)
#undef AK_LOAD
  if (!missing.empty())
    return error("the NVIDIA driver lacks " + missing + " (install a driver for CUDA " +
                 std::to_string(CUDA_VERSION / 1000) + " or newer)");
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

Result<const CudaDriver*> cuda_driver() {
  static const Result<const CudaDriver*> loaded = load();
  return loaded;
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
