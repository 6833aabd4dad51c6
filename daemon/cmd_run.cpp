// autokernel run --config FILE: the optimization loop.
#include <cstdio>

#include "config/config.hpp"
#include "daemon/arg_parser.hpp"
#include "daemon/commands.hpp"
#include "harness/cuda_driver.hpp"

namespace ak {

int run_command(const Args& args) {
  std::string file;
  ArgParser p("autokernel run --config FILE",
              "Runs the keep/revert loop on the kernels of a config until they converge or a budget\n"
              "is spent. Needs a GPU.");
  p.option("config", "FILE", "the TOML config (see config/example.toml)", &file);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (file.empty()) return std::fprintf(stderr, "autokernel run: --config FILE is required\n"), kExitUsage;
  auto cfg = load_config(file);
  if (!cfg) return std::fprintf(stderr, "%s\n", cfg.error().message.c_str()), kExitUsage;
  if (auto drv = cuda_driver(); !drv) {
    std::fprintf(stderr,
                 "autokernel run: a GPU is needed: %s.\nWithout a GPU these work: autokernel config check %s, "
                 "autokernel compile starter --kernel rmsnorm, autokernel kernels.\n",
                 drv.error().message.c_str(), file.c_str());
    return kExitUsage;
  }
  std::fprintf(stderr,
               "autokernel run: the keep/revert loop is not built yet in this version; the config is "
               "valid and a GPU is present. To evaluate a kernel file now: autokernel bench starter --kernel %s\n",
               cfg->kernels.front().type.c_str());
  return kExitUsage;
}

}  // namespace ak
