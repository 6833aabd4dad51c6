#include "harness/grid_launch.hpp"

#include "kernels_cuda/grid_rules.h"

namespace ak {
namespace {

CUlaunchConfig cluster_config(CUlaunchAttribute& attr, int cluster_blocks, int64_t blocks, int threads, int smem,
                              CUstream s) {
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

/// The blocks of this function the GPU holds at once, in whole clusters.
Result<int64_t> resident_blocks(GpuContext& gpu, CUfunction f, int cluster_blocks, int threads, int smem) {
  const CudaDriver& d = gpu.driver();
  const std::string what = std::to_string(threads) + " threads and " + std::to_string(smem) + " bytes of shared memory";
  if (cluster_blocks > 1) {
    CUlaunchAttribute attr{};
    CUlaunchConfig c = cluster_config(attr, cluster_blocks, cluster_blocks, threads, smem, nullptr);
    int clusters = 0;
    if (auto s = cu_check(d.cuOccupancyMaxActiveClusters(&clusters, f, &c),
                          "asking how many clusters of " + std::to_string(cluster_blocks) + " blocks of " + what + " fit");
        !s)
      return s.error();
    if (clusters < 1)
      return error("a cluster of " + std::to_string(cluster_blocks) + " blocks of " + what + " does not fit on " +
                   gpu.info().name + ": lower " + kClusterBlocksSymbol + " or the block's shared memory");
    return int64_t(clusters) * cluster_blocks;
  }
  int per_sm = 0;
  if (auto s = cu_check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, size_t(smem)),
                        "asking how many blocks of " + what + " fit on one SM");
      !s)
    return s.error();
  if (per_sm < 1) return error("a block of " + what + " does not fit on one SM of " + gpu.info().name);
  return int64_t(per_sm) * gpu.info().sm_count;
}

}  // namespace

std::string grid_launch_problem(int cluster_blocks, int persistent, int cc_major) {
  if (cluster_blocks < 1 || cluster_blocks > kMaxClusterBlocks)
    return std::string(kClusterBlocksSymbol) + " = " + std::to_string(cluster_blocks) + ": expected 1 to " +
           std::to_string(kMaxClusterBlocks) + " blocks per cluster";
  if (cluster_blocks > 1 && cc_major < 9)
    return std::string(kClusterBlocksSymbol) + " = " + std::to_string(cluster_blocks) +
           ": clusters need compute capability 9.0 or newer, and this GPU is " + std::to_string(cc_major) + ".x";
  if (persistent != 0 && persistent != 1)
    return std::string(kPersistentSymbol) + " = " + std::to_string(persistent) + ": expected 0 or 1";
  return "";
}

Result<GridLaunch> read_grid_launch(GpuContext& gpu, const LoadedModule& module,
                                    const std::map<DType, CUfunction>& functions, int block_threads, int smem_bytes) {
  auto cluster = module.read_int(kClusterBlocksSymbol);
  if (!cluster) return cluster.error();
  auto persistent = module.read_int(kPersistentSymbol);
  if (!persistent) return persistent.error();
  GridLaunch g;
  g.cluster_blocks = cluster->value_or(1);
  const int p = persistent->value_or(0);
  if (std::string why = grid_launch_problem(g.cluster_blocks, p, gpu.info().cc_major); !why.empty()) return error(why);
  g.persistent = p == 1;
  // Measured for clusters too: a cluster that does not fit is refused at load, not at the first launch.
  if (g.persistent || g.cluster_blocks > 1)
    for (auto& [dt, f] : functions) {
      auto n = resident_blocks(gpu, f, g.cluster_blocks, block_threads, smem_bytes);
      if (!n) return n.error();
      g.resident_blocks[dt] = *n;
    }
  return g;
}

int64_t launch_blocks(const GridLaunch& g, DType d, int64_t work_blocks) {
  if (work_blocks < 1) return work_blocks;
  if (!g.persistent) return ak_cluster_rounded_blocks(work_blocks, g.cluster_blocks);
  auto it = g.resident_blocks.find(d);
  return ak_persistent_blocks(work_blocks, it == g.resident_blocks.end() ? 0 : it->second, g.cluster_blocks);
}

CUresult launch_grid(const CudaDriver& driver, CUfunction f, const GridLaunch& g, int64_t blocks, int block_threads,
                     int smem_bytes, CUstream s, void** params) {
  if (g.cluster_blocks <= 1)
    return driver.cuLaunchKernel(f, unsigned(blocks), 1, 1, unsigned(block_threads), 1, 1, unsigned(smem_bytes), s,
                                 params, nullptr);
  CUlaunchAttribute attr{};
  CUlaunchConfig c = cluster_config(attr, g.cluster_blocks, blocks, block_threads, smem_bytes, s);
  return driver.cuLaunchKernelEx(&c, f, params, nullptr);
}

}  // namespace ak
