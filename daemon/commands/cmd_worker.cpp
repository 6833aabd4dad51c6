// autokernel worker: internal. The daemon (and bench) start it and talk to it over pipes.
#include <cstdlib>

#include "daemon/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "harness/worker_main.hpp"

namespace ak {

int worker_command(const Args& args) {
  std::string device = "0";
  ArgParser p("autokernel worker [--device N]",
              "Internal: evaluates candidates sent as JSON lines on stdin, answering on stdout.\n"
              "Started by the daemon and by bench; not meant to be run by hand.");
  p.option("device", "N", "the GPU index", &device);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  return run_worker(std::atoi(device.c_str()));
}

}  // namespace ak
