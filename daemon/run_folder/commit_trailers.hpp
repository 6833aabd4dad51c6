#pragma once
/// What a kept experiment's commit says of it: a subject line for people, and its metrics as
/// trailers ("Autokernel-Latency-Us: 117.470"), so that the history alone can give back a results
/// row that a crash lost between the commit and the row (daemon/run_folder/git_history.hpp).
#include <string>

#include "common/result.hpp"
#include "daemon/run_folder/git_history.hpp"
#include "daemon/run_folder/results_table.hpp"

namespace ak {

/// The commit message of a kept experiment, metrics as trailers.
std::string commit_message(const ResultRow& row, double previous_best_us, const std::string& unit);
/// The row a kept experiment's commit describes (to replace one lost in a crash); an Error names
/// the commit and the first trailer missing or not a number.
Result<ResultRow> row_from_commit(const CommitInfo& c);

}  // namespace ak
