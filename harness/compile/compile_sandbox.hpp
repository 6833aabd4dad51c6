#pragma once
/// NVRTC for candidates, in a process of its own that can read nothing but CUDA's headers: the
/// compile server (`autokernel compile-server`, compile_server.cpp). It runs with the minimal
/// environment, from CUDA's include folder, under the file guard (file_guard.hpp) and, where
/// the kernel offers it, Landlock (landlock.hpp). It stays up between compiles, so a compile
/// costs what NVRTC costs; a crash of NVRTC on a hostile file costs that compile and a restart.
/// Each compile is bounded (compile_limits.hpp): the server runs under an address-space limit and
/// a CPU limit per compile, is waited for no longer than the time limit, and is killed with the
/// process that started it (a parent-death signal, and its parent's process group).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/compile/compile_limits.hpp"
#include "harness/compile/nvrtc_compile.hpp"

namespace ak {

/// A compile in the sandbox: NVRTC's output, and what the compiler was refused.
struct SandboxedCompile {
  CompileOutput output;
  std::vector<std::string> refused;   ///< paths the compiler asked for outside CUDA's headers
  CompileLimit limit = CompileLimit::None;   ///< the limit the compile went over (then output.ok is false)
};

/// Compiles `req` in the compile server (started on first use, restarted after a crash). An
/// Error means the server could not be used at all; a crash on this file is a failed compile.
Result<SandboxedCompile> compile_in_sandbox(const CompileRequest& req);

/// What starts the compile server: this binary's `compile-server` unless set (tests run the
/// autokernel binary from another one). The limits' options are added to it.
void set_compile_server_command(const std::vector<std::string>& argv);

/// The limits of every compile from now on in this process (kDefaultCompileLimits unless set).
void set_compile_limits(const CompileLimits& limits);
CompileLimits compile_limits();

/// How the server says it is ready: which of its two guards hold ("file guard" always;
/// "Landlock" where the kernel offers it), for the log.
std::string compile_sandbox_guards();

// The protocol, one JSON line each way; a reply's cubin follows its line as raw bytes.
void to_json(nlohmann::json& j, const CompileRequest& r);
void from_json(const nlohmann::json& j, CompileRequest& r);
nlohmann::json reply_json(const CompileOutput& out, const std::vector<std::string>& refused);
/// One protocol line: JSON that never throws on the candidate's bytes (invalid UTF-8 in a compile
/// log is replaced, U+FFFD), newline-terminated.
std::string protocol_line(const nlohmann::json& j);

}  // namespace ak
