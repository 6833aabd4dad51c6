#pragma once
/// The GPUs of a run: one worker process each (an Evaluator of its own, its own context, peaks
/// and watchdog), so that a crash or a hang on one GPU restarts that worker alone.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "config/config.hpp"
#include "harness/evaluation/evaluator.hpp"

namespace ak {

struct GpuWorker {
  int device = 0;
  std::string model;                 ///< the driver's name for it, e.g. "NVIDIA H100 80GB HBM3"
  Evaluator* evaluator = nullptr;
};

/// The device indices the config asks for, given the GPUs the driver lists: [gpu] devices,
/// "all", or [gpu] device alone. An Error names a device that does not exist.
Result<std::vector<int>> chosen_devices(const GpuConfig& gpu, int device_count);

/// GPUs of different models time the same kernel differently, so a run's bests could not be
/// compared: refused unless mixed_models = "per-kernel" (each kernel stays on one model).
Status check_models(const std::vector<GpuWorker>& workers, const std::string& mixed_models);

}  // namespace ak
