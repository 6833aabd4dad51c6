#pragma once
/// The harness's own kernels (drawing inputs, checking outputs): CUDA text of ours, compiled with
/// NVRTC once per worker, outside the sandbox (it is trusted), and loaded into the context.
#include <string>
#include <vector>

#include "harness/gpu/gpu_context.hpp"

namespace ak {

struct HarnessModule {
  LoadedModule module;
  std::vector<CUfunction> functions;   ///< one per name expression, in order
  std::vector<std::string> lowered_names;   ///< their mangled names, as CUPTI's records give them
};

/// Compiles `source` for the GPU, after the references' prelude (its dtype conversions ref_f and
/// ref_out), and looks up each of `name_expressions`; an Error is a harness bug.
Result<HarnessModule> load_harness_module(GpuContext& gpu, const std::string& source, const std::string& filename,
                                          const std::vector<std::string>& name_expressions);

}  // namespace ak
