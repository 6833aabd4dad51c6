#pragma once
/// What a run folder says about itself, for people: the status table, a Markdown report, and
/// an SVG chart of throughput over experiments per kernel with the kept steps marked (the
/// progress plot of the AutoKernel paper).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "daemon/loop/results_table.hpp"

namespace ak {

struct RunSnapshot {
  std::string dir;
  nlohmann::json state;           ///< state.json; empty object when the run has not written one
  std::vector<ResultRow> rows;    ///< results.tsv
};

/// Reads a run folder without changing it (the daemon may be writing it).
Result<RunSnapshot> read_run(const std::string& dir);

std::string status_text(const RunSnapshot& s);
std::string markdown_report(const RunSnapshot& s, const std::string& svg_name);
std::string progress_svg(const std::vector<ResultRow>& rows);

}  // namespace ak
