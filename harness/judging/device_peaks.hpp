#pragma once
/// Measuring a GPU's bandwidth once and caching it per GPU, so every verdict's pct_peak is
/// against what this very card reaches.
#include <string>

#include "harness/gpu/gpu_context.hpp"
#include "harness/judging/roofline.hpp"

namespace ak {

/// The cached peaks of this GPU, measured now if there are none yet.
Result<DevicePeaks> device_peaks(GpuContext& gpu);

/// Where they are cached: $AUTOKERNEL_CACHE_DIR, $XDG_CACHE_HOME/autokernel, ~/.cache/autokernel.
std::string peaks_cache_file(const GpuInfo& info);

/// Device-to-device copy of 1 GiB, median of 10 after warm-up: (read + write) bytes / time.
Result<double> measure_copy_bandwidth(GpuContext& gpu);

/// cuBLAS (loaded at run time) fp16 GEMM 8192^3 with fp32 accumulation, median of 10 (the
/// timing of a cuBLAS baseline, time_cublas_gemms): TFLOPS.
/// An Error when cuBLAS cannot be loaded or fails, saying which.
Result<double> measure_gemm_tflops(GpuContext& gpu);

}  // namespace ak
