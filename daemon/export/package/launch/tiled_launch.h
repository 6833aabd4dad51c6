// The launch of a tensor-core kernel (matmul, fused_mlp, flash_attention) as autokernel's harness
// makes it (harness/module/kernel_launch.cpp): the tile rule's blocks rounded up to whole clusters, or for
// a persistent kernel the blocks the GPU holds at once (grid_rules.h); the tensor maps the module
// declares encoded for this very call over the call's own operands (tensor_map_rules.h: the view,
// the refusals that leave a map zero with its bit clear, box, swizzle, L2 promotion) and passed as
// the entry point's last parameter; cuLaunchKernelEx where the kernel runs in clusters
// (grid_launch_rules.h). Written by autokernel export; the three rule headers are the harness's own.
// Nothing is allocated: the maps live on the stack and the driver copies the parameters at launch,
// so a launch inside a CUDA graph capture records them as they are.
#pragma once
#include <string>

#include "grid_launch_rules.h"
#include "grid_rules.h"
#include "loaded_module.h"
#include "tensor_map_rules.h"

namespace autokernel_launch {

/// How a map sees argument `operand` of the entry point in this call (the generated launcher knows
/// its type's operands); false when that argument cannot be mapped.
using OperandView = bool (*)(int operand, const long long* shape, int dtype, ak_tensor_map_view& view);

/// The blocks of one launch for `work_blocks` of the tile rule: whole clusters, or the persistent grid.
inline long long tiled_launch_blocks(const Loaded& m, int entry, long long work_blocks) {
  if (work_blocks < 1) return work_blocks;
  if (!m.persistent) return ak_cluster_rounded_blocks(work_blocks, m.cluster_blocks);
  const long long resident = entry < int(m.resident_blocks.size()) ? m.resident_blocks[entry] : 0;
  return ak_persistent_blocks(work_blocks, resident, m.cluster_blocks);
}

/// Encodes the module's maps for this call into `param`: nullptr, or what failed (a map over an
/// argument the launcher cannot view, or a map the driver refuses where the checks let it through).
inline const char* encode_call_maps(const Loaded& m, const long long* shape, int dtype, OperandView view_of,
                                    void* const* arguments, int argument_count, ak_tensor_maps_param& param) {
  thread_local std::string message;
  ak_tensor_map_view views[ak_max_tensor_maps];
  CUdeviceptr bases[ak_max_tensor_maps] = {};
  const int count = int(m.tensor_maps.size());
  for (int i = 0; i < count; ++i) {
    const int operand = m.tensor_maps[i].operand;
    if (operand < 0 || operand >= argument_count || !arguments[operand] || !view_of(operand, shape, dtype, views[i]))
      return (message = "ak_tensor_maps[" + std::to_string(i) + "] maps argument " + std::to_string(operand) +
                        ", which is no buffer this kernel type's launcher can map")
          .c_str();
    bases[i] = reinterpret_cast<CUdeviceptr>(*static_cast<void* const*>(arguments[operand]));
  }
  int failed = 0;
  const Driver& d = driver();
  if (CUresult r = ak_encode_tensor_maps(d.cuTensorMapEncodeTiled, m.tensor_maps.data(), count, views, bases, param, &failed);
      r != CUDA_SUCCESS)
    return (message = "the driver refuses ak_tensor_maps[" + std::to_string(failed) + "] (" + std::to_string(views[failed].rows) +
                      " x " + std::to_string(views[failed].cols) + "): " + driver_error(d, r))
        .c_str();
  return nullptr;
}

/// Launches entry `entry` for `work_blocks` of the tile rule. `arguments` are the addresses of the
/// entry point's arguments in the spec's order (a buffer's: the address of its pointer), with one
/// slot more at the end for the maps' parameter when the module declares maps. nullptr, or what failed.
inline const char* launch_tiled(const Loaded& m, int entry, long long work_blocks, const long long* shape, int dtype,
                                OperandView view_of, void** arguments, int argument_count, CUstream stream) {
  const long long blocks = tiled_launch_blocks(m, entry, work_blocks);
  if (blocks < 1 || blocks > 0x7fffffff) return "the grid is empty or too large for this launch";
  ak_tensor_maps_param maps;
  if (!m.tensor_maps.empty()) {
    if (const char* e = encode_call_maps(m, shape, dtype, view_of, arguments, argument_count, maps)) return e;
    arguments[argument_count] = &maps;
  }
  const Driver& d = driver();
  const CUresult r = ak_launch_grid(d, m.functions[entry], m.cluster_blocks, blocks, m.block_threads, m.smem_bytes, stream,
                                    arguments);
  if (r == CUDA_SUCCESS) return nullptr;
  thread_local std::string message;
  return (message = "the kernel launch failed: " + driver_error(d, r)).c_str();
}

}  // namespace autokernel_launch
