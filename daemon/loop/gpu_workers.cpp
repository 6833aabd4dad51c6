#include "daemon/loop/gpu_workers.hpp"

#include <map>

namespace ak {

Result<std::vector<int>> chosen_devices(const GpuConfig& gpu, int device_count) {
  std::vector<int> out;
  if (gpu.all_devices)
    for (int d = 0; d < device_count; ++d) out.push_back(d);
  else
    out = gpu.devices.empty() ? std::vector<int>{gpu.device} : gpu.devices;
  if (out.empty()) return error("[gpu] devices = \"all\", but the driver lists no GPU: check nvidia-smi");
  for (int d : out)
    if (d >= device_count)
      return error("[gpu] asks for device " + std::to_string(d) + ", but the driver lists " + std::to_string(device_count) +
                   " GPU(s) (0 - " + std::to_string(device_count - 1) +
                   "): fix [gpu] devices or device (CUDA_VISIBLE_DEVICES renumbers them)");
  return out;
}

Status check_models(const std::vector<GpuWorker>& workers, const std::string& mixed_models) {
  std::map<std::string, std::string> by_model;
  for (auto& w : workers) by_model[w.model] += (by_model[w.model].empty() ? "" : ", ") + std::to_string(w.device);
  if (by_model.size() <= 1 || mixed_models == "per-kernel") return ok();
  std::string list;
  for (auto& [model, devices] : by_model) list += (list.empty() ? "" : "; ") + model + " (device " + devices + ")";
  return error("the GPUs of [gpu] devices are of different models: " + list +
               ". A kernel timed on one model cannot be compared with its time on another. List GPUs of one model, "
               "or set [gpu] mixed_models = \"per-kernel\" to keep each kernel on the model that measured its starter");
}

}  // namespace ak
