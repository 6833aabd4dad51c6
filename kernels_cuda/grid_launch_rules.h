// How a tensor-core kernel's blocks reach the GPU beyond its tile rule, as plain C++ over cuda.h
// with no autokernel type, so that one text serves the harness (harness/module/grid_launch.cpp) and the
// launchers `autokernel export` writes, which copy this file: clusters of blocks along x
// (`ak_cluster_blocks`, launched with cuLaunchKernelEx) and persistent grids (`ak_persistent`: as
// many blocks as the GPU holds at once, measured with the driver's occupancy calls). The block
// counts themselves are grid_rules.h's (ak_cluster_rounded_blocks, ak_persistent_blocks).
// `Driver` is any table of the driver's functions under their own names (the harness's CudaDriver,
// the package's loaded_module.h Driver).
#pragma once
#include <cuda.h>

#include <string>

constexpr int ak_max_cluster_blocks = 8;  ///< the portable cluster size

/// Why `ak_cluster_blocks` = cluster_blocks and `ak_persistent` = persistent cannot be launched on a
/// GPU of compute capability `cc_major` ("" when they can); the checks that need no GPU.
inline std::string ak_grid_launch_problem(int cluster_blocks, int persistent, int cc_major) {
  if (cluster_blocks < 1 || cluster_blocks > ak_max_cluster_blocks)
    return "ak_cluster_blocks = " + std::to_string(cluster_blocks) + ": expected 1 to " +
           std::to_string(ak_max_cluster_blocks) + " blocks per cluster";
  if (cluster_blocks > 1 && cc_major < 9)
    return "ak_cluster_blocks = " + std::to_string(cluster_blocks) +
           ": clusters need compute capability 9.0 or newer, and this GPU is " + std::to_string(cc_major) + ".x";
  if (persistent != 0 && persistent != 1) return "ak_persistent = " + std::to_string(persistent) + ": expected 0 or 1";
  return "";
}

/// The launch of `blocks` blocks along x in clusters of `cluster_blocks`; `attr` holds the cluster
/// dimension the config points to.
inline CUlaunchConfig ak_cluster_launch_config(CUlaunchAttribute& attr, int cluster_blocks, long long blocks, int threads,
                                               int smem, CUstream s) {
  attr = CUlaunchAttribute{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = unsigned(cluster_blocks);
  attr.value.clusterDim.y = 1;
  attr.value.clusterDim.z = 1;
  CUlaunchConfig c{};
  c.gridDimX = unsigned(blocks);
  c.gridDimY = c.gridDimZ = 1;
  c.blockDimX = unsigned(threads);
  c.blockDimY = c.blockDimZ = 1;
  c.sharedMemBytes = unsigned(smem);
  c.hStream = s;
  c.attrs = &attr;
  c.numAttrs = 1;
  return c;
}

/// The driver's text for `r`.
template <class Driver>
inline std::string ak_driver_error_text(const Driver& d, CUresult r) {
  const char* text = nullptr;
  if (d.cuGetErrorString) d.cuGetErrorString(r, &text);
  return text ? std::string(text) : "CUDA error " + std::to_string(int(r));
}

/// The blocks of `f` the GPU (`sm_count` SMs, named `gpu` in messages) holds at once, in whole
/// clusters, into `out`; "" or why not (a driver error, or a block or cluster that does not fit).
template <class Driver>
inline std::string ak_resident_blocks(const Driver& d, CUfunction f, int cluster_blocks, int threads, int smem,
                                      int sm_count, const std::string& gpu, long long& out) {
  const std::string what = std::to_string(threads) + " threads and " + std::to_string(smem) + " bytes of shared memory";
  if (cluster_blocks > 1) {
    CUlaunchAttribute attr;
    CUlaunchConfig c = ak_cluster_launch_config(attr, cluster_blocks, cluster_blocks, threads, smem, nullptr);
    int clusters = 0;
    if (CUresult r = d.cuOccupancyMaxActiveClusters(&clusters, f, &c); r != CUDA_SUCCESS)
      return "asking how many clusters of " + std::to_string(cluster_blocks) + " blocks of " + what +
             " fit: " + ak_driver_error_text(d, r);
    if (clusters < 1)
      return "a cluster of " + std::to_string(cluster_blocks) + " blocks of " + what + " does not fit on " + gpu +
             ": lower ak_cluster_blocks or the block's shared memory";
    out = (long long)clusters * cluster_blocks;
    return "";
  }
  int per_sm = 0;
  if (CUresult r = d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, size_t(smem)); r != CUDA_SUCCESS)
    return "asking how many blocks of " + what + " fit on one SM: " + ak_driver_error_text(d, r);
  if (per_sm < 1) return "a block of " + what + " does not fit on one SM of " + gpu;
  out = (long long)per_sm * sm_count;
  return "";
}

/// One launch of `blocks` blocks: cuLaunchKernel, or cuLaunchKernelEx with the cluster dimension.
template <class Driver>
inline CUresult ak_launch_grid(const Driver& d, CUfunction f, int cluster_blocks, long long blocks, int threads, int smem,
                               CUstream s, void** params) {
  if (cluster_blocks <= 1)
    return d.cuLaunchKernel(f, unsigned(blocks), 1, 1, unsigned(threads), 1, 1, unsigned(smem), s, params, nullptr);
  CUlaunchAttribute attr;
  CUlaunchConfig c = ak_cluster_launch_config(attr, cluster_blocks, blocks, threads, smem, s);
  return d.cuLaunchKernelEx(&c, f, params, nullptr);
}
