#pragma once
/// The compile sandbox's server side: `autokernel compile-server`, started by compile_sandbox.cpp.
namespace ak {

/// Warms NVRTC up (it loads its builtins on the first compile), moves into CUDA's include folder,
/// binds itself to it (Landlock where offered, the file guard always), then compiles requests
/// from stdin until it closes. Returns the exit code.
int run_compile_server();

}  // namespace ak
