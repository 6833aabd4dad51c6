// autokernel compile-server: internal. The compile sandbox (harness/compile_sandbox.hpp) starts
// it and sends it candidates to compile; it can read nothing but CUDA's headers.
#include "daemon/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "harness/compile_server.hpp"

namespace ak {

int compile_server_command(const Args& args) {
  ArgParser p("autokernel compile-server",
              "Internal: compiles kernel files sent as JSON lines on stdin with NVRTC, in a process\n"
              "that can read nothing but CUDA's headers. Started by the harness; not meant to be\n"
              "run by hand.");
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  return run_compile_server();
}

}  // namespace ak
