#pragma once
/// results.tsv: one row per experiment, tab-separated, header first (docs/design.md's columns).
/// Rows are appended and synced before the next experiment begins; a row cut short by a crash,
/// or damaged later, is moved aside (results.damaged.tsv) when the daemon next opens the table.
#include <string>
#include <vector>

#include "common/result.hpp"

namespace ak {

/// What an experiment was, recorded as a field: what a row counts for never depends on the words
/// of its description, which an LLM writes.
enum class MoveKind { Edit, Structure, Baseline };
const char* move_name(MoveKind m);

struct ResultRow {
  long long experiment = 0;
  std::string tag;              ///< the kernel entry's id, e.g. "rmsnorm"
  std::string kernel_type;
  double throughput = 0;        ///< GB/s or TFLOPS
  double latency_us = 0;
  double pct_peak = 0;
  double speedup = 0;           ///< over the baseline
  std::string correctness;      ///< PASS, FAIL, COMPILE_ERROR, TIMEOUT, CRASH, SUSPECT, NO_PROPOSAL, ERROR
  double peak_vram_mb = 0;
  bool kept = false;
  std::string commit;           ///< the commit of a kept row
  long long llm_tokens = 0;
  double seconds = 0;           ///< wall time of the experiment
  std::string description;
  // The keep decision's evidence: the best timed again beside the candidate (0: not paired).
  double paired_best_us = 0;    ///< the best's median in the candidate's own timing
  double paired_ratio = 0;      ///< median of candidate / best over the pairs
  double paired_noise = 0;      ///< half-width of that median's 95% interval
  MoveKind move = MoveKind::Edit;   ///< a baseline, an edit, or a switch to another structure
  std::string failure{};        ///< why a row did not pass (the harness's or proposer's message)
  double predicted_us = 0;      ///< the time its proposer predicted (0: none)
};

/// The header line, without its newline.
const std::string& results_header();
std::string format_row(const ResultRow& r);
Result<ResultRow> parse_row(const std::string& line);

/// A line of the table that is not a row (damaged by hand, by a disk, or cut short by a crash).
struct DamagedRow {
  size_t line = 0;      ///< its line number in the table, the header being line 1
  std::string text;     ///< the line as it stands, without its newline
  std::string why;
};

/// The table as it stands: its whole rows, and the lines between or after them that are not rows.
struct ResultsTable {
  std::vector<ResultRow> rows;
  std::vector<DamagedRow> damaged;
};

/// The file beside the table where a damaged line is kept aside: results.damaged.tsv.
std::string damaged_rows_path(const std::string& results_path);

/// Reads the table for the daemon, and repairs it: a damaged line, and a last line cut short by a
/// crash, is appended to results.damaged.tsv, named in the log, and taken out of the table; the
/// rows after it stay. Creates the table with its header when absent. A table of an older
/// autokernel, without the paired columns, the move and failure columns or predicted_us, is rewritten with them
/// so new rows fit its header (an older row's move and failure are read once from its
/// description, the only place such a table kept them).
Result<std::vector<ResultRow>> open_results(const std::string& path);
/// Reads the table as it is, changing nothing (for readers while the daemon writes): its rows and
/// its damaged lines, for the reader to show.
Result<ResultsTable> read_results_table(const std::string& path);
/// read_results_table for a reader that needs every row: an Error naming the first damaged line.
Result<std::vector<ResultRow>> read_results(const std::string& path);
/// Appends one row and syncs it to disk.
Status append_result(const std::string& path, const ResultRow& r);

}  // namespace ak
