#include "harness/judging/device_peaks.hpp"

#include "common/atomic_write.hpp"
#include "harness/gpu/cublas_gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace ak {
namespace fs = std::filesystem;

std::string peaks_cache_file(const GpuInfo& info) {
  fs::path dir;
  if (const char* d = std::getenv("AUTOKERNEL_CACHE_DIR")) dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME")) dir = fs::path(x) / "autokernel";
  else if (const char* h = std::getenv("HOME")) dir = fs::path(h) / ".cache" / "autokernel";
  else dir = fs::temp_directory_path() / "autokernel";
  std::string id = info.name + "-" + std::to_string(info.sm_count) + "sm-" + std::to_string(info.total_bytes >> 20) + "MiB";
  for (char& c : id)
    if (!std::isalnum((unsigned char)c) && c != '-') c = '_';
  return (dir / ("peaks-" + id + ".json")).string();
}

Result<double> measure_copy_bandwidth(GpuContext& gpu) {
  const CudaDriver& d = gpu.driver();
  const size_t bytes = size_t(1) << 30;
  auto a = gpu.alloc(bytes), b = gpu.alloc(bytes);
  if (!a) return a.error();
  if (!b) return b.error();
  d.cuMemsetD8(a->ptr(), 1, bytes);
  CUevent e0, e1;
  d.cuEventCreate(&e0, CU_EVENT_DEFAULT);
  d.cuEventCreate(&e1, CU_EVENT_DEFAULT);
  std::vector<double> gbps;
  for (int i = 0; i < 13; ++i) {
    d.cuEventRecord(e0, nullptr);
    d.cuMemcpyDtoD(b->ptr(), a->ptr(), bytes);
    d.cuEventRecord(e1, nullptr);
    if (auto s = cu_check(d.cuEventSynchronize(e1), "timing a device copy"); !s) return s.error();
    float ms = 0;
    d.cuEventElapsedTime(&ms, e0, e1);
    if (i >= 3) gbps.push_back(2.0 * double(bytes) / (ms * 1e-3) / 1e9);
  }
  d.cuEventDestroy(e0);
  d.cuEventDestroy(e1);
  std::sort(gbps.begin(), gbps.end());
  return gbps[gbps.size() / 2];
}

Result<double> measure_gemm_tflops(GpuContext& gpu) {
  const int64_t n = 8192;
  auto us = time_cublas_gemms(gpu, {{n, n, n}}, DType::F16, 10);
  if (!us) return error(us.error().message + ": the compute peak is not measured");
  return 2.0 * double(n) * double(n) * double(n) / (*us * 1e-6) / 1e12;
}

Result<DevicePeaks> device_peaks(GpuContext& gpu) {
  const std::string file = peaks_cache_file(gpu.info());
  if (std::ifstream in(file); in) {
    try {
      auto j = nlohmann::json::parse(in);
      DevicePeaks p{j.at("bandwidth_gbps").get<double>(), j.value("compute_tflops", 0.0)};
      if (p.bandwidth_gbps > 0 && p.compute_tflops > 0) return p;
    } catch (const std::exception& e) {
      spdlog::warn("ignoring the unreadable peaks cache {}: {}; measuring again", file, e.what());
    }
  }
  spdlog::info("measuring the peak bandwidth of {} (once per GPU; cached in {})", gpu.info().name, file);
  auto bw = measure_copy_bandwidth(gpu);
  if (!bw) return bw.error();
  DevicePeaks p{*bw, 0};
  if (auto tf = measure_gemm_tflops(gpu)) p.compute_tflops = *tf;
  else spdlog::warn("{}; pct_peak of compute-bound kernels will be 0 on this GPU", tf.error().message);
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  // Workers on GPUs of one model start together and share this file: a reader sees one whole
  // file or the other (write_file_atomic).
  const std::string text =
      nlohmann::json{{"gpu", gpu.info().name}, {"bandwidth_gbps", p.bandwidth_gbps}, {"compute_tflops", p.compute_tflops},
                     {"method", "cuMemcpyDtoD 1 GiB, median of 10; cublasGemmEx fp16 8192^3 fp32 accumulate, median of 10"}}
          .dump(2);
  if (auto s = write_file_atomic(file, text); !s)
    spdlog::warn("could not cache the peaks ({}): they will be measured again next time", s.error().message);
  return p;
}

}  // namespace ak
