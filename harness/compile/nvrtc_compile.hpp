#pragma once
/// Compiling a kernel file with NVRTC to a cubin for one GPU architecture. Needs no GPU.
#include <string>
#include <vector>

#include "common/result.hpp"

namespace ak {

/// What ptxas reported for one entry point.
struct FunctionInfo {
  std::string name_expression;   ///< e.g. "rmsnorm_kernel<__half>"
  std::string lowered_name;      ///< the mangled name in the cubin
  int registers = -1;
  int spill_stores = 0, spill_loads = 0;   ///< bytes
  int stack_bytes = 0;
  int static_smem_bytes = 0;
};

struct CompileRequest {
  std::string source;
  std::string filename = "kernel.cu";
  std::vector<std::string> name_expressions;   ///< template instantiations to emit
  std::string arch = "sm_90a";
};

struct CompileOutput {
  bool ok = false;
  std::string log;        ///< NVRTC's diagnostics, verbatim but truncated (ptxas statistics removed)
  std::vector<char> cubin;
  std::vector<FunctionInfo> functions;
  double seconds = 0;
  bool out_of_memory = false;   ///< NVRTC said so (NVRTC_ERROR_OUT_OF_MEMORY)
};

/// A compile error is ok=false with the log; an Error means NVRTC itself could not be used.
Result<CompileOutput> nvrtc_compile(const CompileRequest& req);

/// NVRTC's version, "12.8": part of what a compile's output depends on.
std::string nvrtc_version();

/// Keeps the head of a long log (the first errors matter most), cut at a character boundary,
/// and says how much was cut.
std::string truncate_log(const std::string& log, size_t max_chars = 8000);

/// Where CUDA's headers are: $CUDA_HOME/include, else the toolkit autokernel was built with.
std::string cuda_include_dir();

/// The folders NVRTC searches, all under cuda_include_dir(): the folder itself and, where the
/// toolkit has it (CUDA 13 and later), its cccl folder.
std::vector<std::string> cuda_include_dirs();

/// "sm_90a" from a compute capability; Hopper gets the 'a' suffix for wgmma and TMA.
std::string arch_for(int major, int minor);

}  // namespace ak
