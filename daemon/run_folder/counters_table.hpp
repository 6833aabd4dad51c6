#pragma once
/// counters.tsv, beside results.tsv in a run folder: one row per judged experiment whose verdict
/// carried counters (readings, or why there are none), tab-separated, header first, so that a
/// run's counters can be plotted or joined to results.tsv by experiment number. results.tsv
/// keeps its columns: a reader of an older table is not affected.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "harness/gpu/hardware_counters.hpp"

namespace ak {

struct CountersRow {
  long long experiment = 0;
  std::string tag;
  int registers = -1, spill_bytes = 0;   ///< ptxas's, at the timed dtype
  /// The readings; of the stalls only the largest is kept in the table.
  HardwareCounters counters;
  /// What limits the kernel by these readings, in words ("memory-bound"; daemon/proposers/bottleneck.hpp
  /// diagnoses it, the writer of the row fills it in); written only beside readings.
  std::string bottleneck;
};

/// The header line, without its newline.
const std::string& counters_header();
std::string format_counters_row(const CountersRow& r);
Result<CountersRow> parse_counters_row(const std::string& line);

/// The table's file in run folder `root`.
std::string counters_table_path(const std::string& root);

/// Appends one row and syncs it; creates the table with its header first when absent.
Status append_counters(const std::string& path, const CountersRow& r);
/// Every row of the table (none when it does not exist: a run of an older autokernel, or one
/// with counters off); a damaged line is skipped, as readers of results.tsv skip one.
std::vector<CountersRow> read_counters_table(const std::string& path);

}  // namespace ak
