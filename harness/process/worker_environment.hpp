#pragma once
/// The environment of the processes that touch candidates (the worker, the compile server): only
/// what CUDA and the harness need, never the daemon's own. A kernel can read its process's
/// memory and environment (a GPU with HMM reaches host memory), and a compile error can quote a
/// file: so nothing worth reading may be there. The API key stays in the daemon's memory.
#include <string>
#include <vector>

namespace ak {

/// The names kept (when set): PATH, HOME, LANG, LC_ALL, TZ, TMPDIR, LD_LIBRARY_PATH,
/// CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, CUDA_HOME, CUDA_PATH, CUDA_CACHE_PATH,
/// CUDA_CACHE_DISABLE, CUDA_MODULE_LOADING, NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES,
/// AUTOKERNEL_CACHE_DIR, XDG_CACHE_HOME, JOURNAL_STREAM.
const std::vector<std::string>& kept_environment_names();

/// "NAME=value" for each kept name set in this process, and for each of `extra` (a config's
/// [harness] worker_env) that is set.
std::vector<std::string> minimal_environment(const std::vector<std::string>& extra = {});

}  // namespace ak
