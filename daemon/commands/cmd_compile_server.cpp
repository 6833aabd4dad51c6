// autokernel compile-server: internal. The compile sandbox (harness/compile/compile_sandbox.hpp) starts
// it and sends it candidates to compile; it can read nothing but CUDA's headers.
#include <cstdlib>

#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "harness/compile/compile_server.hpp"

namespace ak {

int compile_server_command(const Args& args) {
  std::string cpu_seconds = "0";
  ArgParser p("autokernel compile-server [--cpu-seconds N]",
              "Internal: compiles kernel files sent as JSON lines on stdin with NVRTC, in a process\n"
              "that can read nothing but CUDA's headers. Started by the harness; not meant to be\n"
              "run by hand.");
  p.option("cpu-seconds", "N", "CPU time allowed to each compile (0: no limit)", &cpu_seconds);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  return run_compile_server({std::atoi(cpu_seconds.c_str())});
}

}  // namespace ak
