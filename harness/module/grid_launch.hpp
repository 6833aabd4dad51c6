#pragma once
/// How a candidate's blocks reach the GPU beyond its type's tile rule: in clusters of blocks along
/// x (`ak_cluster_blocks`, launched with cuLaunchKernelEx) and, for a persistent kernel
/// (`ak_persistent`), as many blocks as the GPU holds at once, the kernel looping over its tiles.
/// Both are read from the compiled module and checked against the GPU at hand, so the harness and
/// an exported launcher size the grid the same way (kernels_cuda/grid_rules.h).
#include <cstdint>
#include <map>
#include <string>

#include "common/result.hpp"
#include "harness/gpu/gpu_context.hpp"
#include "kernels_cuda/grid_launch_rules.h"
#include "kernels_cuda/spec.hpp"

namespace ak {

inline constexpr const char* kClusterBlocksSymbol = "ak_cluster_blocks";
inline constexpr const char* kPersistentSymbol = "ak_persistent";
inline constexpr int kMaxClusterBlocks = ak_max_cluster_blocks;   ///< the portable cluster size

struct GridLaunch {
  int cluster_blocks = 1;
  bool persistent = false;
  /// Persistent kernels: the blocks the GPU holds at once, per dtype (registers may differ).
  std::map<DType, int64_t> resident_blocks;
};

/// Why the declared values cannot be launched on a GPU of compute capability `cc_major` ("" when
/// they can); the checks that need no GPU.
std::string grid_launch_problem(int cluster_blocks, int persistent, int cc_major);

/// Reads ak_cluster_blocks and ak_persistent from the module, checks them, and measures what the
/// GPU holds at once for each function: an Error when a cluster of this kernel does not fit.
Result<GridLaunch> read_grid_launch(GpuContext& gpu, const LoadedModule& module,
                                    const std::map<DType, CUfunction>& functions, int block_threads, int smem_bytes);

/// The blocks to launch for `work_blocks` of work (the type's tile rule).
int64_t launch_blocks(const GridLaunch& g, DType d, int64_t work_blocks);

/// One launch of `blocks` blocks: cuLaunchKernel, or cuLaunchKernelEx with the cluster dimension.
CUresult launch_grid(const CudaDriver& driver, CUfunction f, const GridLaunch& g, int64_t blocks, int block_threads,
                     int smem_bytes, CUstream s, void** params);

}  // namespace ak
