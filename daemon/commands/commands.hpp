#pragma once
/// The subcommands of `autokernel`, one file each under daemon/. Each takes the arguments after
/// its name and returns the process exit code (docs/design.md: 0 success, 1 failure, 2 bad usage or
/// bad config or no GPU).
#include <string>
#include <vector>

namespace ak {

using Args = std::vector<std::string>;

enum ExitCode : int { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

int config_command(const Args& args);   ///< config check FILE
int kernels_command(const Args& args);  ///< the kernel types and their contracts
int compile_command(const Args& args);  ///< NVRTC compile of a kernel file, no GPU needed
int bench_command(const Args& args);    ///< one full evaluation of a kernel file
int worker_command(const Args& args);   ///< internal: serves evaluations for the daemon
int compile_server_command(const Args& args);  ///< internal: compiles candidates in the sandbox
int run_command(const Args& args);      ///< the optimization loop
int status_command(const Args& args);   ///< where a run stands
int report_command(const Args& args);   ///< report.md and progress.svg of a run
int llm_command(const Args& args);      ///< llm check: one tiny request to the configured LLM
int propose_command(const Args& args);  ///< one proposal for a kernel, no GPU
int profile_command(const Args& args);  ///< profile any CUDA program
int plan_command(const Args& args);     ///< the Amdahl plan of a profile
int export_command(const Args& args);   ///< kept kernels as a PyTorch package
int verify_command(const Args& args);   ///< a model with and without the exported ops
int kernelbench_command(const Args& args);  ///< KernelBench problems -> user type specs and a config

/// Parses with `parser`; prints help or the error. Returns -1 to go on, else the exit code.
class ArgParser;
int parse_or_exit(ArgParser& parser, const Args& args);

}  // namespace ak
