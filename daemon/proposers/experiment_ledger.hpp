#pragma once
/// The long memory of a kernel in its prompt: one line per idea tried on it, every one of them,
/// deduplicated (an idea tried again is one line that says how often), the kept lineage marked,
/// each with what its verdict knew (time against the prediction, the pairing with the best and its
/// noise, registers, spills, shared memory). The daemon's own events (a best judged again or
/// demoted, a harness failure, a reply with no file) are not ideas and stay out of it.
#include <string>
#include <vector>

#include "daemon/proposers/proposer.hpp"

namespace ak {

/// One line of outside text as a JSON string literal ("...", with \" and \\ escaped), cleaned and
/// capped: a literal ends at its first unescaped quote, so nothing in the text can end it early
/// and pass the rest for the daemon's own fields.
std::string quoted_line(const std::string& text, size_t max_bytes);

/// Whether a row is one of the daemon's own events rather than a proposer's idea.
bool is_daemon_event(const PastExperiment& e);

/// Whether a row is a broken proposal: its file did not compile, or the reply held no usable file.
/// These count apart from the reverts (KernelBudget::broken_in_a_row).
bool is_broken_proposal(const std::string& correctness);

/// The ledger's lines, oldest idea first; each a single line whose daemon-written fields come
/// first and whose outside words (the idea, why it failed) come last, each a quoted_line, so they
/// cannot pass for a field.
std::vector<std::string> ledger_lines(const std::vector<PastExperiment>& history);

}  // namespace ak
