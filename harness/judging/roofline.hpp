#pragma once
/// Where a timing stands against what the device can physically do: throughput, the fraction of
/// the measured peak of the bounding resource, and whether it is too good to be true.
#include <string>

#include "harness/judging/verdict.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// The device's limits as measured on it (not its datasheet).
struct DevicePeaks {
  double bandwidth_gbps = 0;   ///< a large device-to-device copy: (read + write) / time
  double compute_tflops = 0;   ///< cuBLAS fp16 GEMM 8192^3; 0 where cuBLAS could not be loaded
};

/// A copy engine reaches 85-90% of HBM's datasheet rate; a kernel may beat the copy a little,
/// but more than this factor over the measured peak is past the datasheet: a timing to distrust.
inline constexpr double kSuspectFactor = 1.10;

struct Roofline {
  double throughput = 0;       ///< GB/s or TFLOPS, per the spec's metric
  std::string unit;            ///< "GB/s" or "TFLOPS"
  double pct_peak = 0;         ///< the roofline's minimum time over the measured time
  double peak = 0;             ///< the peak of the bounding resource, in `unit`
  std::string bound;           ///< "memory" or "compute"
  bool suspect = false;        ///< pct_peak above kSuspectFactor
};

Roofline roofline(const KernelSpec& spec, const Shape& shape, DType d, double median_us, const DevicePeaks& peaks);

/// Puts a candidate's timing into its verdict: the timing, a note when CUPTI did not give it, and
/// where it stands on the roofline. False when it is past what the device can do: v is then the
/// SUSPECT verdict of the benchmark stage (message and failed stage set).
bool timing_on_roofline(Verdict& v, const KernelSpec& spec, const Shape& shape, DType d, const Timing& timing,
                        const DevicePeaks& peaks);

}  // namespace ak
