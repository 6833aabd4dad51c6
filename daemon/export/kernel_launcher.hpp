#pragma once
/// The host code of an exported kernel: a C function that launches a kept kernel file the way
/// the harness does (harness/kernel_launch.cpp): the arguments in its spec's order, the launch
/// geometry read from the module's ak_* constants, the grid of kernels_cuda/grid_rules.h, the
/// template instantiated for each of the spec's dtypes.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// Whether `export` can launch this type: the row-wise types, whose grid is ak_rowwise_blocks and
/// whose op code lives in daemon/export/package/ops/. The tensor-core types are not exported yet.
bool exportable(const KernelSpec& spec);

/// The ak_* constants a kernel file defines ("ak_block_threads", ...), from its text.
std::vector<std::string> exported_constants(const std::string& kernel_source);

/// launch.h: the declaration of each type's launcher,
///   const char* launch_<type>(void* const* buffers, const long long* shape, const float* consts,
///                             int dtype, cudaStream_t stream);   // nullptr, or what failed
std::string launch_header(const std::vector<std::string>& types);

/// <type>_launch.cu: includes the kernel file unchanged (at `kernel_include`, e.g.
/// "../kernels/rmsnorm.cu") and defines its launcher. The file's
/// ak_* symbols are renamed for this translation unit, so that several kernels link into one
/// library. An Error when the file does not export ak_block_threads.
Result<std::string> launcher_source(const KernelSpec& spec, const std::string& kernel_source,
                                    const std::string& kernel_include);

/// <type>_symbols.cpp: the host side of the file's extern "C" __constant__ values. nvcc declares
/// but does not define it without separate compilation, and the runtime's registration of the
/// module refers to it; defined here, in a translation unit of its own, the library loads and
/// cudaMemcpyFromSymbol reads the device's value through it.
std::string host_symbols_source(const std::string& type, const std::string& kernel_source);

}  // namespace ak
