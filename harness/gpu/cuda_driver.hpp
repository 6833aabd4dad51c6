#pragma once
/// The CUDA driver, loaded at run time. autokernel never links libcuda: a machine without an
/// NVIDIA driver can still build, compile kernels and check configs, and "no GPU" is an ordinary
/// answer rather than a loader failure.
#include <cuda.h>

#include <string>
#include <vector>

#include "common/result.hpp"

namespace ak {

// Each entry is typed from cuda.h; cuda.h's version macros (cuMemAlloc -> cuMemAlloc_v2) apply
// to the member names, the calls and the symbol looked up alike, so all three agree.
#define AK_DRIVER_FUNCTIONS(X)                                                              \
  X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)   \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)              \
  X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemGetAddressRange) X(cuMemcpyHtoD) X(cuMemcpyHtoDAsync)         \
  X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemcpyDtoDAsync) X(cuCtxSetLimit) X(cuMemsetD8) X(cuMemsetD8Async) X(cuMemGetInfo)         \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal)         \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuEventCreate)            \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)            \
  X(cuGetErrorName) X(cuGetErrorString) X(cuDriverGetVersion)                                 \
  X(cuLaunchKernelEx) X(cuOccupancyMaxActiveClusters) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)  \
  X(cuFuncGetParamInfo) X(cuTensorMapEncodeTiled) X(cuIpcGetMemHandle) X(cuMemGetAllocationGranularity)

struct CudaDriver {
#define AK_DECLARE(name) decltype(&::name) name = nullptr;
  AK_DRIVER_FUNCTIONS(AK_DECLARE)
#undef AK_DECLARE
};

/// A CUDA event of the driver API, destroyed with it: a timed launch's start or end.
struct CudaEvent {
  const CudaDriver& d;
  CUevent e = nullptr;
  explicit CudaEvent(const CudaDriver& drv) : d(drv) { d.cuEventCreate(&e, CU_EVENT_DEFAULT); }
  CudaEvent(CudaEvent&& o) noexcept : d(o.d), e(o.e) { o.e = nullptr; }
  CudaEvent(const CudaEvent&) = delete;
  ~CudaEvent() {
    if (e) d.cuEventDestroy(e);
  }
};
/// Microseconds from `start` to `end`, both recorded and complete.
inline double elapsed_us(const CudaEvent& start, const CudaEvent& end) {
  float ms = 0;
  start.d.cuEventElapsedTime(&ms, start.e, end.e);
  return double(ms) * 1000.0;
}

/// The driver, loaded once per process; an Error says why there is none ("no NVIDIA driver").
Result<const CudaDriver*> cuda_driver();

/// The model name of each GPU the driver lists, by index ("NVIDIA H100 80GB HBM3"); creates no
/// context, so the daemon can choose its workers' GPUs without holding one.
Result<std::vector<std::string>> gpu_models();

/// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string cu_error_text(CUresult r);

/// Errors after which the context is unusable: the process that saw one must end.
bool cu_error_is_sticky(CUresult r);

/// The driver functions a library at `path` lacks, by the names cuda.h gives them ("" if none).
/// Lets a test check the names against the toolkit's stub libcuda without a GPU.
std::string missing_driver_symbols(const std::string& path);

/// Turns a CUresult into a Status naming the call that failed.
Status cu_check(CUresult r, const std::string& what);

}  // namespace ak
