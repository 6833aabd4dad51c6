#include "harness/module/grid_launch.hpp"

#include "kernels_cuda/grid_launch_rules.h"
#include "kernels_cuda/grid_rules.h"

namespace ak {

std::string grid_launch_problem(int cluster_blocks, int persistent, int cc_major) {
  return ak_grid_launch_problem(cluster_blocks, persistent, cc_major);
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
      long long n = 0;
      if (std::string why = ak_resident_blocks(gpu.driver(), f, g.cluster_blocks, block_threads, smem_bytes,
                                               gpu.info().sm_count, gpu.info().name, n);
          !why.empty())
        return error(why);
      g.resident_blocks[dt] = n;
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
  return ak_launch_grid(driver, f, g.cluster_blocks, blocks, block_threads, smem_bytes, s, params);
}

}  // namespace ak
