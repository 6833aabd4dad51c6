#pragma once
/// Reading an LLM's answer: a plan (a hypothesis line, a predicted time, the model's scratchpad,
/// optionally a library structure to see next time) and the whole new kernel file in a fenced
/// code block. An answer that cannot be used is an Error that says why, recorded as an experiment
/// that failed to propose, never as a crash.
#include <optional>
#include <string>

#include "common/result.hpp"

namespace ak {

struct ProposedEdit {
  std::string description;   ///< one line: the hypothesis, cleaned (common/untrusted_text.hpp)
  std::string source;        ///< the whole kernel file
  double predicted_us = 0;   ///< the "Predicted:" time in microseconds; 0 when none was given
  /// The "Scratchpad:" lines (what to avoid, what to try), cleaned and capped; nullopt when absent.
  std::optional<std::string> scratchpad;
  std::string show;          ///< the "Show:" name: a library structure to see next time
};

/// The most of a scratchpad that is carried from one prompt to the next.
inline constexpr size_t kScratchpadBytes = 1500;

/// Takes the last complete ```cuda (or ```cpp / ```c++ / ```cu) block: a fence of three or more
/// backticks, closed by a line of at least as many. `truncated` is true when the provider stopped
/// at the token limit (finish_reason / stop_reason "length"/"max_tokens"). `entry` is the kernel
/// type's entry point, which the file must mention. A file holding a control character other than
/// tab and line breaks (a NUL, an ESC) is refused. The description is the "Hypothesis:" (or
/// "Description:") line; without one, the first line outside the code that is not the model
/// thinking aloud ("Let me...", "I'll...").
Result<ProposedEdit> parse_reply(const std::string& reply, bool truncated, const std::string& entry);

}  // namespace ak
