#pragma once
/// Reading an LLM's answer: a one-line description and the whole new kernel file in a fenced
/// code block. An answer that cannot be used is an Error that says why, recorded as an
/// experiment that failed to propose, never as a crash.
#include <string>

#include "common/result.hpp"

namespace ak {

struct ProposedEdit {
  std::string description;   ///< one line: what the edit tries, cleaned (common/untrusted_text.hpp)
  std::string source;        ///< the whole kernel file
};

/// Takes the last complete ```cuda (or ```cpp / ```c++ / ```cu) block. `truncated` is true when
/// the provider stopped at the token limit (finish_reason / stop_reason "length"/"max_tokens").
/// `entry` is the kernel type's entry point, which the file must mention. A file holding a
/// control character other than tab and line breaks (a NUL, an ESC) is refused.
Result<ProposedEdit> parse_reply(const std::string& reply, bool truncated, const std::string& entry);

}  // namespace ak
