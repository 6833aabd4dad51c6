#include "harness/process/worker_environment.hpp"

#include <algorithm>
#include <cstdlib>

namespace ak {

const std::vector<std::string>& kept_environment_names() {
  static const std::vector<std::string> names{
      "PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
      "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_CACHE_PATH", "CUDA_CACHE_DISABLE", "CUDA_MODULE_LOADING",
      "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "AUTOKERNEL_CACHE_DIR", "XDG_CACHE_HOME", "AK_REFERENCE_PYTHON",
      "JOURNAL_STREAM", "AUTOKERNEL_DRIVER_TIMES"};
  return names;
}

std::vector<std::string> minimal_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> names = kept_environment_names(), env;
  for (auto& e : extra)
    if (std::find(names.begin(), names.end(), e) == names.end()) names.push_back(e);
  for (auto& n : names)
    if (const char* v = std::getenv(n.c_str())) env.push_back(n + "=" + v);
  return env;
}

}  // namespace ak
