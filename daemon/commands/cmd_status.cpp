// autokernel status --run DIR and autokernel report --run DIR: reading a run folder, also while
// the daemon works in it.
#include <cstdio>
#include <filesystem>
#include <vector>

#include "common/atomic_write.hpp"
#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
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

namespace {

int combined_report_command(const std::string& list, const std::string& out) {
  if (out.empty()) return std::fprintf(stderr, "autokernel report: several runs need --out DIR for the combined report\n"), kExitUsage;
  std::vector<RunSnapshot> runs;
  for (size_t at = 0; at <= list.size();) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    auto snap = read_run(list.substr(at, end - at));
    if (!snap) return std::fprintf(stderr, "autokernel report: %s\n", snap.error().message.c_str()), kExitUsage;
    runs.push_back(std::move(*snap));
    at = end + 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  std::vector<std::pair<std::string, std::string>> files{{"report.md", combined_report(runs)}};
  for (auto& r : runs) files.push_back({std::filesystem::path(r.dir).filename().string() + "-progress.svg", progress_svg(r.rows, r.counters)});
  for (auto& [name, text] : files)
    if (auto s = write_file_atomic(out + "/" + name, text); !s)
      return std::fprintf(stderr, "autokernel report: %s\n", s.error().message.c_str()), kExitFailure;
  std::printf("wrote %s/report.md over %zu runs\n", out.c_str(), runs.size());
  return kExitOk;
}

}  // namespace

int report_command(const Args& args) {
  std::string dir, out, refused;
  ArgParser p("autokernel report --run DIR[,DIR...] [--out DIR]",
              "Writes report.md (per-kernel summary, kept steps, verdict counts; for user types, KernelBench's\n"
              "correctness, speedups over PyTorch eager and torch.compile, and fast_p at 0, 1, 1.5 and 2 over\n"
              "every problem given to `kernelbench`, its refusals included) and progress.svg\n"
              "(throughput over experiments per kernel, kept steps filled) into the run folder or --out.\n"
              "With several run folders (one per box, docs/scale.md): one report.md over all of them,\n"
              "with the whole program's Amdahl speedup, and one <run>-progress.svg each, in --out.");
  p.option("run", "DIR", "the run folder (workdir/name), or several separated by commas", &dir)
      .option("out", "DIR", "where to write (default: the run folder)", &out)
      .option("refused", "FILE", "the problems `kernelbench` refused, counted as not correct (default: the "
              "<config stem>.refused.tsv it wrote beside the run's config, where that is)", &refused);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (dir.empty()) return std::fprintf(stderr, "autokernel report: --run DIR is required\n"), kExitUsage;
  if (!refused.empty() && dir.find(',') != std::string::npos)
    return std::fprintf(stderr, "autokernel report: --refused takes one run folder, not several\n"), kExitUsage;
  if (dir.find(',') != std::string::npos) return combined_report_command(dir, out);
  auto snap = read_run(dir);
  if (!snap) return std::fprintf(stderr, "autokernel report: %s\n", snap.error().message.c_str()), kExitUsage;
  if (!refused.empty()) {
    auto problems = read_kernelbench_refusals(refused);
    if (!problems) return std::fprintf(stderr, "autokernel report: --refused %s\n", problems.error().message.c_str()), kExitUsage;
    snap->kernelbench_refused = std::move(*problems);
    snap->refusals_file = refused;
  }
  if (out.empty()) out = dir;
  std::error_code ec;
  if (std::filesystem::create_directories(out, ec); ec)
    return std::fprintf(stderr, "autokernel report: cannot create the folder %s: %s\n", out.c_str(), ec.message().c_str()),
           kExitFailure;
  for (auto& [name, text] : {std::pair<std::string, std::string>{"report.md", markdown_report(*snap, "progress.svg")},
                             {"progress.svg", progress_svg(snap->rows, snap->counters)}})
    if (auto s = write_file_atomic(out + "/" + name, text); !s)
      return std::fprintf(stderr, "autokernel report: %s\n", s.error().message.c_str()), kExitFailure;
  std::printf("wrote %s/report.md and %s/progress.svg\n", out.c_str(), out.c_str());
  return kExitOk;
}

}  // namespace ak
