#pragma once
/// What a run folder says about itself, for people: the status table, a Markdown report (with
/// KernelBench's scores when the run has user types, daemon/report/kernelbench_scores.hpp), and
/// an SVG chart of throughput over experiments per kernel with the kept steps marked (the
/// progress plot of the AutoKernel paper).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "daemon/report/kernelbench_scores.hpp"
#include "daemon/run_folder/counters_table.hpp"
#include "daemon/run_folder/results_table.hpp"

namespace ak {

struct RunSnapshot {
  std::string dir;
  nlohmann::json state;           ///< state.json; empty object when the run has not written one
  std::vector<ResultRow> rows;    ///< results.tsv
  std::vector<DamagedRow> damaged;   ///< its lines that are not rows: shown, not counted
  /// The problems `kernelbench` refused for the config of this run (default_refusals_path, or
  /// `report --refused FILE`), and that file: KernelBench's denominators count them.
  std::vector<RefusedProblem> kernelbench_refused;
  std::string refusals_file;
  /// The problems the config runs as built-in types and their PyTorch times, where `kernelbench`
  /// (and `kernelbench --baselines`) left them (default_builtin_problems_path).
  std::vector<BuiltinProblem> builtin_problems;
  std::vector<ProblemBaseline> problem_baselines;
  /// counters.tsv: the hardware counters of each judged experiment (none in an older run).
  std::vector<CountersRow> counters;
};

/// Reads a run folder without changing it (the daemon may be writing it). An Error names what
/// cannot be read (the folder, results.tsv, state.json, the refusals of `kernelbench` where they
/// are) and why; a damaged results row is listed in `damaged` and the rows after it are read.
Result<RunSnapshot> read_run(const std::string& dir);

std::string status_text(const RunSnapshot& s);
std::string markdown_report(const RunSnapshot& s, const std::string& svg_name);
/// With `counters`, each kept point is labelled with what limited it ("memory 91%": the reading
/// that decided, daemon/proposers/bottleneck.hpp) and its tooltip gives the main readings.
std::string progress_svg(const std::vector<ResultRow>& rows, const std::vector<CountersRow>& counters = {});

/// Several run folders that split one program's kernels between them (one daemon per box, see
/// docs/scale.md): every kernel of every run in one table, and the whole program's Amdahl
/// speedup over all of them (their weights are shares of the same program).
std::string combined_report(const std::vector<RunSnapshot>& runs);

}  // namespace ak
