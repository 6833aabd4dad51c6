// autokernel worker: internal. The daemon (and bench) start it and talk to it over pipes.
#include <cstdlib>

#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "harness/compile/compile_sandbox.hpp"
#include "harness/worker/worker_main.hpp"

namespace ak {

int worker_command(const Args& args) {
  std::string device = "0", stage_timeout = std::to_string(kDefaultStageTimeoutS);
  ArgParser p("autokernel worker [--device N] [--stage-timeout-s S]",
              "Internal: evaluates candidates sent as JSON lines on stdin, answering on stdout.\n"
              "Started by the daemon and by bench; not meant to be run by hand.");
  p.option("device", "N", "the GPU index", &device);
  p.option("stage-timeout-s", "S", "the daemon's watchdog limit per stage: compiles end within it", &stage_timeout);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  set_compile_limits(compile_limits_within(std::atof(stage_timeout.c_str())));
  return run_worker(std::atoi(device.c_str()));
}

}  // namespace ak
