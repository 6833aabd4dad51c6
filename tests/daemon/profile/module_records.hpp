#pragma once
// Records as the injection library writes them for a program under `profile --modules`: the NVTX
// ranges daemon/profile/module_hook/sitecustomize.py pushes, with kernels launched inside them.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ak::test {

/// Records of one program: ranges on CPU thread 1, kernels launched inside them.
struct Recorder {
  std::vector<nlohmann::json> records{nlohmann::json{{"k", "meta"}, {"gpu", "NVIDIA H100 80GB HBM3"}}};
  long long next_id = 1, corr = 1;
  double gpu_t = 1e9;  // kernels run one after another on the GPU, 1 us apart

  long long push(const std::string& name, double t) {
    records.push_back({{"k", "marker"}, {"id", next_id}, {"tid", 1}, {"t", t}, {"flag", "start"}, {"name", name}});
    return next_id++;
  }
  void pop(long long id, double t) { records.push_back({{"k", "marker"}, {"id", id}, {"tid", 1}, {"t", t}, {"flag", "end"}}); }
  void kernel(const std::string& name, double launch_t, double us) {
    records.push_back({{"k", "api"}, {"corr", corr}, {"tid", 1}, {"start", launch_t}});
    records.push_back({{"k", "kernel"}, {"name", name}, {"start", gpu_t}, {"end", gpu_t + us * 1000}, {"corr", corr++}});
    gpu_t += us * 1000 + 1000;
  }
};

}  // namespace ak::test
