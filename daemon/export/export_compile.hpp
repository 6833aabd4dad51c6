#pragma once
/// What an exported package carries of a kernel file: the modules NVRTC compiled from it, by the
/// very compile the harness runs (harness/compile/candidate_compile.hpp: the contract, NVRTC in the
/// compile sandbox, the module-state check), one per architecture. Never the file's text: code
/// that NVRTC does not see (under `#if !defined(__CUDACC_RTC__)`, `#ifndef __CUDA_ARCH__`, or
/// after a NUL byte) would be seen by a host compiler, and no check of the text can tell.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// One compiled module: a cubin for one architecture and its entry points.
struct ExportedModule {
  std::string arch;                  ///< "sm_90a"
  std::vector<char> cubin;           ///< as NVRTC wrote it
  std::vector<std::string> entries;  ///< the lowered name of each of the spec's dtypes, in their order
};

/// The file compiled for each of `archs`; an Error, naming `origin`, when the harness would refuse
/// it (the message is the compile's verdict) or when the compiler cannot be used.
Result<std::vector<ExportedModule>> compile_for_export(const KernelSpec& spec, const std::string& source,
                                                       const std::string& origin, const std::vector<std::string>& archs);

/// The CUDA version of the NVRTC autokernel compiles with, as the driver API counts it (13000 for
/// 13.0): a driver older than that cannot load what it wrote.
int nvrtc_cuda_version();

}  // namespace ak
