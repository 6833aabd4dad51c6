#pragma once
/// The host code of an exported kernel: a C function that launches the module NVRTC compiled from
/// a kept kernel file the way the harness does (harness/kernel_launch.cpp): loaded with the CUDA
/// driver, the arguments in its spec's order, the launch geometry read from the module's ak_*
/// constants, the grid of kernels_cuda/grid_rules.h, one entry point for each of the spec's dtypes.
/// All of it is autokernel's own code; of the kernel file only the compiled module goes in, as bytes.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "daemon/export/export_compile.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// Whether `export` can launch this type: the row-wise types and rotary_embedding, whose grids are
/// rules of kernels_cuda/grid_rules.h and whose op code lives in daemon/export/package/ops/. The
/// tensor-core types are not exported yet.
bool exportable(const KernelSpec& spec);
/// The grid rule's call in a generated launcher ("ak_rowwise_blocks(s, 2, m->rows_per_block)"),
/// or "" for a grid no rule describes.
std::string grid_rule_call(const KernelSpec& spec);

/// The ak_* constants a kernel file defines ("ak_block_threads", ...), from its text.
std::vector<std::string> exported_constants(const std::string& kernel_source);

/// launch.h: for each exported file's spec (the version the file declares), the version and the
/// declaration of its launcher,
///   #define AK_CONTRACT_VERSION_<type> <version>
///   const char* launch_<type>(void* const* buffers, const long long* shape, const float* consts,
///                             int dtype, cudaStream_t stream);   // nullptr, or what failed
///   const char* load_<type>();   // loads the module in the current CUDA context: nullptr, or what failed
std::string launch_header(const std::vector<const KernelSpec*>& specs);

/// <type>_module.h: the compiled modules as byte arrays, one per architecture, and the lowered
/// name of each dtype's entry point.
std::string module_header(const KernelSpec& spec, const std::vector<ExportedModule>& modules);

/// <type>_launch.cpp: host C++ only, including <type>_module.h and the package's loaded_module.h;
/// defines launch_<type> and load_<type> (the op calls load at import, outside any graph capture).
/// An Error when the file does not export ak_block_threads.
Result<std::string> launcher_source(const KernelSpec& spec, const std::string& kernel_source);

}  // namespace ak
