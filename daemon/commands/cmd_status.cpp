// autokernel status --run DIR and autokernel report --run DIR: reading a run folder, also while
// the daemon works in it.
#include <cstdio>

#include "daemon/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/loop/run_directory.hpp"
#include "daemon/report/run_report.hpp"

namespace ak {

int status_command(const Args& args) {
  std::string dir;
  ArgParser p("autokernel status --run DIR",
              "Where a run stands: per kernel the baseline, best time, speedup, pct_peak, experiments and\n"
              "whether it has converged (and why); the LLM spend; the last experiment. Safe while the\n"
              "daemon runs.");
  p.option("run", "DIR", "the run folder (workdir/name)", &dir);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (dir.empty()) return std::fprintf(stderr, "autokernel status: --run DIR is required\n"), kExitUsage;
  auto snap = read_run(dir);
  if (!snap) return std::fprintf(stderr, "autokernel status: %s\n", snap.error().message.c_str()), kExitUsage;
  std::printf("%s", status_text(*snap).c_str());
  return kExitOk;
}

int report_command(const Args& args) {
  std::string dir, out;
  ArgParser p("autokernel report --run DIR [--out DIR]",
              "Writes report.md (per-kernel summary, kept steps, verdict counts) and progress.svg\n"
              "(throughput over experiments per kernel, kept steps filled) into the run folder or --out.");
  p.option("run", "DIR", "the run folder (workdir/name)", &dir).option("out", "DIR", "where to write (default: the run folder)", &out);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (dir.empty()) return std::fprintf(stderr, "autokernel report: --run DIR is required\n"), kExitUsage;
  auto snap = read_run(dir);
  if (!snap) return std::fprintf(stderr, "autokernel report: %s\n", snap.error().message.c_str()), kExitUsage;
  if (out.empty()) out = dir;
  for (auto& [name, text] : {std::pair<std::string, std::string>{"report.md", markdown_report(*snap, "progress.svg")},
                             {"progress.svg", progress_svg(snap->rows)}})
    if (auto s = write_file_atomic(out + "/" + name, text); !s)
      return std::fprintf(stderr, "autokernel report: %s\n", s.error().message.c_str()), kExitFailure;
  std::printf("wrote %s/report.md and %s/progress.svg\n", out.c_str(), out.c_str());
  return kExitOk;
}

}  // namespace ak
