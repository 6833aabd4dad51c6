#pragma once
/// The compile sandbox's server side: `autokernel compile-server`, started by compile_sandbox.cpp.
#include <cstdint>

namespace ak {

/// The bounds the server applies to itself (its address space is limited by whoever starts it).
struct CompileServerLimits {
  int cpu_seconds = 0;        ///< CPU time per compile (RLIMIT_CPU, armed afresh before each); 0: none
};

/// Warms NVRTC up (it loads its builtins on the first compile), moves into CUDA's include folder,
/// binds itself to it (Landlock where offered, the file guard always), then compiles requests
/// from stdin until it closes. A compile that runs out of memory (NVRTC says so, or dies of it
/// with half its address space or more in use) is answered as over the memory limit, after which
/// the server ends; one that runs out of CPU time is killed by SIGXCPU.
/// Returns the exit code.
int run_compile_server(const CompileServerLimits& limits);

}  // namespace ak
