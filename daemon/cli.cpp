#include "daemon/cli.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>

#include <spdlog/spdlog.h>

#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/commands/logging.hpp"

namespace ak {
namespace {

struct Command {
  const char* name;
  const char* summary;
  std::function<int(const Args&)> run;
};

const std::vector<Command>& commands() {
  static const std::vector<Command> table{
      {"run", "run the optimization loop on a config (--config FILE)", run_command},
      {"bench", "evaluate one kernel file: five stages, then timing (needs a GPU)", bench_command},
      {"compile", "compile a kernel file with NVRTC and report registers and spills (no GPU)", compile_command},
      {"kernels", "list the kernel types, their entry points, shapes and tolerances", kernels_command},
      {"config", "config check FILE: validate a config file", config_command},
      {"llm", "llm check --config FILE: one tiny request to the configured LLM", llm_command},
      {"propose", "one proposal for a kernel from the configured proposer (no GPU)", propose_command},
      {"status", "where a run stands (--run DIR)", status_command},
      {"report", "a Markdown summary and SVG chart of a run (--run DIR)", report_command},
      {"profile", "profile a CUDA program: profile -- CMD ARGS...", profile_command},
      {"plan", "the Amdahl table of a profile and its [[kernel]] entries", plan_command},
      {"export", "the kept kernels as a PyTorch package of custom ops (--run DIR --out DIR)", export_command},
      {"verify", "a model with and without the exported ops: outputs and end-to-end speedup", verify_command},
      {"kernelbench", "KernelBench problem files -> user type specs and a config (--out CONFIG)", kernelbench_command},
      {"worker", "internal: the process that runs candidates for the daemon", worker_command},
      {"compile-server", "internal: the process that compiles candidates, reading only CUDA's headers", compile_server_command},
  };
  return table;
}

std::string main_help() {
  std::string h =
      "usage: autokernel [--log-level LEVEL] <command> [options]\n\n"
      "autokernel makes GPU kernels faster on its own: it proposes one edit of a kernel file,\n"
      "compiles it, proves it correct, times it, and keeps it if it is faster.\n\ncommands:\n";
  size_t width = 0;
  for (auto& c : commands()) width = std::max(width, std::string(c.name).size() + 2);
  for (auto& c : commands())
    h += "  " + std::string(c.name) + std::string(width - std::string(c.name).size(), ' ') + c.summary + "\n";
  h += "\nglobal options:\n"
       "  --log-level LEVEL   trace, debug, info (default), warn, error\n"
       "  --version           print the version\n"
       "  --help              this help; `autokernel <command> --help` for a command's own\n";
  return h;
}

}  // namespace

int parse_or_exit(ArgParser& parser, const Args& args) {
  bool help = false;
  if (auto s = parser.parse(args, help); !s) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return kExitUsage;
  }
  if (help) {
    std::printf("%s", parser.help().c_str());
    return kExitOk;
  }
  return -1;
}

int run_cli(const std::vector<std::string>& raw) {
  Args args;
  std::string level = "info";
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == "--log-level" && i + 1 < raw.size()) level = raw[++i];
    else if (raw[i].rfind("--log-level=", 0) == 0) level = raw[i].substr(12);
    else args.push_back(raw[i]);
  }
  auto lvl = parse_log_level(level);
  if (!lvl) {
    std::fprintf(stderr, "--log-level %s: expected trace, debug, info, warn or error\n", level.c_str());
    return kExitUsage;
  }
  setup_logging(*lvl);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::printf("%s", main_help().c_str());
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version") {
    std::printf("autokernel %s\n", kVersion);
    return kExitOk;
  }
  for (auto& c : commands())
    if (args[0] == c.name) {
      Args rest(args.begin() + 1, args.end());
      return c.run(rest);
    }
  std::fprintf(stderr, "autokernel: unknown command '%s' (commands: ", args[0].c_str());
  for (size_t i = 0; i < commands().size(); ++i) std::fprintf(stderr, "%s%s", i ? ", " : "", commands()[i].name);
  std::fprintf(stderr, "; see autokernel --help)\n");
  return kExitUsage;
}

}  // namespace ak
