// What every exported launcher shares: the kernels NVRTC compiled, loaded with the CUDA driver
// and launched on PyTorch's stream, as autokernel's harness does (harness/module/kernel_launch.cpp).
// Written by autokernel export. The package holds no kernel source: <type>_module.h carries the
// compiled module byte for byte, and nothing of a kernel file ever reaches a host compiler.
//
// Like the harness, this never links libcuda: the driver is opened when the module first loads (at import)
// (libcuda.so.1, which is where a GPU is), so the extension builds with no driver library or
// stub at hand and imports on a machine without a GPU.
#pragma once
#include <cuda.h>
#include <dlfcn.h>

#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "grid_launch_rules.h"
#include "tensor_map_rules.h"

namespace autokernel_launch {

#define AK_LAUNCH_STR(x) #x
#define AK_LAUNCH_XSTR(x) AK_LAUNCH_STR(x)
// cuda.h's version macros (cuModuleGetGlobal -> cuModuleGetGlobal_v2) apply to the member, the
// call and the symbol looked up alike, so all three agree.
#define AK_LAUNCH_DRIVER(X)                                                                      \
  X(cuDriverGetVersion) X(cuCtxGetCurrent) X(cuModuleLoadData) X(cuModuleGetFunction)           \
  X(cuModuleGetGlobal) X(cuMemcpyDtoH) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuGetErrorString)   \
  X(cuCtxGetDevice) X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuLaunchKernelEx)                \
  X(cuOccupancyMaxActiveClusters) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuTensorMapEncodeTiled)

struct Driver {
#define AK_LAUNCH_DECLARE(name) decltype(&::name) name = nullptr;
  AK_LAUNCH_DRIVER(AK_LAUNCH_DECLARE)
#undef AK_LAUNCH_DECLARE
  std::string error;  ///< why there is no driver; empty when there is one
};

inline const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return d.error = "cannot open the CUDA driver (libcuda.so.1): " + std::string(dlerror()), d;
#define AK_LAUNCH_RESOLVE(name)                                                          \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, AK_LAUNCH_XSTR(name)));          \
  if (!d.name && d.error.empty()) d.error = "the CUDA driver has no " AK_LAUNCH_XSTR(name);
    AK_LAUNCH_DRIVER(AK_LAUNCH_RESOLVE)
#undef AK_LAUNCH_RESOLVE
    return d;
  }();
  return d;
}

/// One compiled module, as NVRTC wrote it for one architecture.
struct Image {
  const char* arch;
  const unsigned char* bytes;
  std::size_t size;
};

/// What a launcher knows of its kernel: the compiled images, the lowered name of each entry point
/// (one per dtype), and the driver the images need.
struct ModuleSpec {
  const char* type;
  const Image* images;
  int image_count;
  const char* const* entries;
  int entry_count;
  int driver_version;   ///< the CUDA version of the NVRTC that compiled them (13000 for 13.0)
};

/// A module loaded in one context, with its entry points and launch geometry; for the tensor-core
/// types also its tiles, the tensor maps it declares, its clusters and, for a persistent grid, the
/// blocks the GPU holds at once per entry point (tiled_launch.h reads those).
struct Loaded {
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  int block_threads = 0, rows_per_block = 1, smem_bytes = 0;
  int tile_m = 0, tile_n = 0, cluster_blocks = 1, persistent = 0;
  std::vector<ak_tensor_map_decl> tensor_maps;
  std::vector<long long> resident_blocks;  ///< per entry point; empty unless clustered or persistent
};

inline std::string driver_error(const Driver& d, CUresult r) {
  const char* text = nullptr;
  d.cuGetErrorString(r, &text);
  return text ? text : "CUDA error " + std::to_string(int(r));
}

/// The value of an `extern "C" __constant__ int` the module exports, or `fallback` when absent.
inline std::string read_constant(const Driver& d, CUmodule m, const char* symbol, int fallback, int& out) {
  CUdeviceptr p = 0;
  std::size_t bytes = 0;
  CUresult r = d.cuModuleGetGlobal(&p, &bytes, m, symbol);
  if (r == CUDA_ERROR_NOT_FOUND) return out = fallback, "";
  if (r != CUDA_SUCCESS) return std::string("cannot find ") + symbol + ": " + driver_error(d, r);
  if (bytes != sizeof(int)) return std::string(symbol) + " is not an int";
  r = d.cuMemcpyDtoH(&out, p, sizeof(int));
  return r == CUDA_SUCCESS ? "" : std::string("cannot read ") + symbol + ": " + driver_error(d, r);
}

/// The rows of `extern "C" __constant__ int ak_tensor_maps[N][5]` (none when the module has no
/// such constant), each checked by tensor_map_rules.h as the harness checked it at load; "" or why not.
inline std::string read_tensor_maps(const Driver& d, CUmodule m, std::vector<ak_tensor_map_decl>& out) {
  CUdeviceptr p = 0;
  std::size_t bytes = 0;
  CUresult r = d.cuModuleGetGlobal(&p, &bytes, m, "ak_tensor_maps");
  if (r == CUDA_ERROR_NOT_FOUND) return "";
  if (r != CUDA_SUCCESS) return "ak_tensor_maps cannot be found: " + driver_error(d, r);
  const std::size_t row = sizeof(int) * ak_tensor_map_fields;
  if (bytes == 0 || bytes % row || bytes / row > std::size_t(ak_max_tensor_maps))
    return "ak_tensor_maps is " + std::to_string(bytes) + " bytes: expected 1 to 8 rows of 5 ints";
  std::vector<int> ints(bytes / sizeof(int));
  if ((r = d.cuMemcpyDtoH(ints.data(), p, bytes)) != CUDA_SUCCESS) return "ak_tensor_maps cannot be read: " + driver_error(d, r);
  for (std::size_t i = 0; i < ints.size(); i += ak_tensor_map_fields) {
    ak_tensor_map_decl m;
    m.operand = ints[i], m.box_cols = ints[i + 1], m.box_rows = ints[i + 2], m.swizzle = ints[i + 3], m.l2_promotion = ints[i + 4];
    if (std::string why = ak_tensor_map_decl_problem(m); !why.empty())
      return "ak_tensor_maps[" + std::to_string(i / ak_tensor_map_fields) + "]: " + why;
    out.push_back(m);
  }
  return "";
}

/// Clusters and persistent grids as the harness reads them (harness/module/grid_launch.cpp, the same
/// grid_launch_rules.h): checked against this GPU, and for a persistent or clustered kernel the
/// blocks the GPU holds at once measured per entry point, so that a cluster that does not fit is
/// refused at load, not at the first launch; "" or why not.
inline std::string read_grid_launch(const Driver& d, const ModuleSpec& spec, Loaded& out) {
  CUdevice device = 0;
  int cc_major = 0, sm_count = 0;
  char name[256] = {0};
  if (CUresult r = d.cuCtxGetDevice(&device); r != CUDA_SUCCESS) return "cannot find the current device: " + driver_error(d, r);
  d.cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  d.cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  d.cuDeviceGetName(name, int(sizeof name) - 1, device);
  if (std::string why = ak_grid_launch_problem(out.cluster_blocks, out.persistent, cc_major); !why.empty())
    return std::string("the ") + spec.type + " module: " + why;
  if (!out.persistent && out.cluster_blocks <= 1) return "";
  for (CUfunction f : out.functions) {
    long long n = 0;
    if (std::string why = ak_resident_blocks(d, f, out.cluster_blocks, out.block_threads, out.smem_bytes, sm_count, name, n);
        !why.empty())
      return std::string("the ") + spec.type + " module: " + why;
    out.resident_blocks.push_back(n);
  }
  return "";
}

/// Loads the first image the driver accepts for this GPU, finds its entry points and reads its
/// launch geometry; "" or why not.
inline std::string load(const ModuleSpec& spec, CUcontext context, Loaded& out) {
  const Driver& d = driver();
  int version = 0;
  d.cuDriverGetVersion(&version);
  std::string tried;
  for (int i = 0; i < spec.image_count && !out.module; ++i) {
    CUresult r = d.cuModuleLoadData(&out.module, spec.images[i].bytes);
    if (r != CUDA_SUCCESS) out.module = nullptr, tried += std::string(tried.empty() ? "" : ", ") + spec.images[i].arch + ": " + driver_error(d, r);
  }
  if (!out.module)
    return std::string("no compiled module of the ") + spec.type + " kernel loads on this GPU (" + tried + "); the driver is for CUDA " +
           std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + ", the modules need " +
           std::to_string(spec.driver_version / 1000) + "." + std::to_string(spec.driver_version % 1000 / 10) +
           " or newer: export the kernel again with --arch for this GPU, or update the driver";
  out.context = context;
  for (int e = 0; e < spec.entry_count; ++e) {
    CUfunction f = nullptr;
    if (CUresult r = d.cuModuleGetFunction(&f, out.module, spec.entries[e]); r != CUDA_SUCCESS)
      return std::string("the ") + spec.type + " module has no " + spec.entries[e] + ": " + driver_error(d, r);
    out.functions.push_back(f);
  }
  for (auto [symbol, field, fallback] : {std::make_tuple("ak_block_threads", &out.block_threads, 0),
                                          std::make_tuple("ak_rows_per_block", &out.rows_per_block, 1),
                                          std::make_tuple("ak_smem_bytes", &out.smem_bytes, 0),
                                          std::make_tuple("ak_tile_m", &out.tile_m, 0),
                                          std::make_tuple("ak_tile_n", &out.tile_n, 0),
                                          std::make_tuple("ak_cluster_blocks", &out.cluster_blocks, 1),
                                          std::make_tuple("ak_persistent", &out.persistent, 0)})
    if (std::string e = read_constant(d, out.module, symbol, fallback, *field); !e.empty()) return e;
  if (out.block_threads < 1 || out.block_threads > 1024 || out.rows_per_block < 1 || out.smem_bytes < 0 ||
      out.tile_m < 0 || out.tile_n < 0)
    return std::string("the ") + spec.type + " module exports an impossible launch geometry";
  if (std::string e = read_tensor_maps(d, out.module, out.tensor_maps); !e.empty()) return std::string("the ") + spec.type + " module's " + e;
  if (out.smem_bytes > 48 * 1024)
    for (CUfunction f : out.functions)
      if (CUresult r = d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, out.smem_bytes); r != CUDA_SUCCESS)
        return "cannot allow the kernel's dynamic shared memory: " + driver_error(d, r);
  return read_grid_launch(d, spec, out);
}

/// The module loaded in the current context (PyTorch's, for the tensors' device), loaded on first
/// use there: the op's <type>_load makes that use at import, outside any CUDA graph capture, so a
/// launch finds it loaded. A failed load is kept and said again at every call, never retried halfway.
class Module {
 public:
  explicit Module(const ModuleSpec& spec) : spec_(spec) {}

  /// The module of the current context, or nullptr with `error` set (it lives as long as the
  /// process, so a launcher can return it).
  const Loaded* current(const char*& error) {
    const Driver& d = driver();
    if (!d.error.empty()) return error = d.error.c_str(), nullptr;
    CUcontext context = nullptr;
    if (d.cuCtxGetCurrent(&context) != CUDA_SUCCESS || !context) return error = "no current CUDA context", nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.begin();
    while (it != loaded_.end() && it->loaded.context != context) ++it;
    if (it == loaded_.end()) {
      it = loaded_.emplace(loaded_.end());
      it->error = load(spec_, context, it->loaded);
      it->loaded.context = context;
    }
    if (!it->error.empty()) return error = it->error.c_str(), nullptr;
    return &it->loaded;
  }

 private:
  struct Entry {
    Loaded loaded;
    std::string error;
  };
  const ModuleSpec& spec_;
  std::mutex mutex_;
  std::list<Entry> loaded_;  // a list: an entry's error stays where it is while others are added
};

/// Launches entry `entry` on `blocks` blocks of the module's geometry; nullptr, or what failed.
inline const char* launch(const Loaded& m, int entry, long long blocks, CUstream stream, void** args) {
  if (blocks < 1 || blocks > 0x7fffffff) return "the grid is empty or too large for this launch";
  const Driver& d = driver();
  CUresult r = d.cuLaunchKernel(m.functions[entry], unsigned(blocks), 1, 1, unsigned(m.block_threads), 1, 1,
                                unsigned(m.smem_bytes), stream, args, nullptr);
  if (r == CUDA_SUCCESS) return nullptr;
  const char* text = nullptr;
  d.cuGetErrorString(r, &text);
  return text ? text : "the kernel launch failed";
}

}  // namespace autokernel_launch
