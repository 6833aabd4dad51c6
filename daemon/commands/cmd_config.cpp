// autokernel config check FILE: reads a config the way `run` would and says what it found.
#include <cstdio>

#include "config/config.hpp"
#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/loop/run_preflight.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

int config_command(const Args& args) {
  std::string action, file;
  ArgParser p("autokernel config check FILE",
              "Reads a config file and checks every key, type and range, and everything `run` checks\n"
              "before it needs a GPU (the run folder can be made, shapes fit a GPU, no kernel listed\n"
              "twice, a first file for every kernel); names the file, line and key of each problem.\n"
              "Exit 0 when the file is good, 2 when it is not.");
  p.positional("check", "the action (only 'check' exists)", &action).positional("FILE", "the TOML config", &file);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (action != "check") {
    std::fprintf(stderr, "autokernel config: unknown action '%s' (expected: config check FILE)\n", action.c_str());
    return kExitUsage;
  }
  auto cfg = load_config(file);
  if (!cfg) {
    std::fprintf(stderr, "%s\n", cfg.error().message.c_str());
    return kExitUsage;
  }
  if (auto s = check_before_gpu(*cfg); !s) {   // what `run` checks before it needs a GPU
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return kExitUsage;
  }
  std::printf("%s: ok\n  run %s in %s\n  proposer: %s%s\n  convergence: %d reverts, %.0f%% of peak, %.1f h per kernel, %.2gx, keep at %.1f%%\n",
              file.c_str(), cfg->run.name.c_str(), cfg->run_dir().c_str(), provider_name(cfg->llm.provider),
              cfg->llm.model.empty() ? "" : (" (" + cfg->llm.model + ")").c_str(),
              cfg->convergence.max_consecutive_reverts, cfg->convergence.peak_fraction * 100,
              cfg->convergence.max_hours_per_kernel, cfg->convergence.target_speedup,
              cfg->convergence.keep_threshold * 100);
  for (auto& k : cfg->kernels)
    std::printf("  kernel %s %s %s, weight %.3g%s\n", k.type.c_str(), shape_str(k.shape).c_str(), k.dtype.c_str(),
                k.weight, k.baseline_us ? (", baseline " + std::to_string(*k.baseline_us) + " us").c_str() : "");
  return kExitOk;
}

}  // namespace ak
