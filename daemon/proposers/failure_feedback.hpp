#pragma once
/// What an engineer reads after a failed try: the file that failed, as a diff against the current
/// best (the whole file when there is no best yet), and beside it what the harness said (its
/// message, and the compiler's log of a file that did not compile), each in a fence it cannot
/// close and capped, so that a log the candidate wrote through `#error` stays a quoted log.
#include <string>
#include <vector>

#include "daemon/proposers/proposer.hpp"

namespace ak {

/// The failures shown, newest last.
inline constexpr size_t kFailuresShown = 3;
inline constexpr size_t kFailureDiffBytes = 3000;

/// One text per failure among the last kFailuresShown of `history` (a candidate that did not
/// compile, failed a check, crashed or hung), oldest first; and, when the last reply of the model
/// could not be used, a line saying why.
std::vector<std::string> failure_feedback(const std::vector<PastExperiment>& history, const std::string& best_source);

}  // namespace ak
