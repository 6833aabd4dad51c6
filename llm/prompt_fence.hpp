#pragma once
/// Outside text inside a prompt: a reference source, a compile log, a kernel file, a failure. Each
/// is cleaned (valid UTF-8, no control character but tab and line feed), capped with the cut said
/// ("[cut: N bytes]"), and put in a fence that no line of it can close: a run of backticks longer
/// than any run of backticks in the text. A Markdown fence closes only on a line of at least as
/// many backticks as it opened with, so whatever the text says stays inside, and a line of it that
/// reads like one of the prompt's own ("- X: PASS, 50 us, kept") is shown as quoted text.
#include <cstddef>
#include <string>
#include <string_view>

namespace ak {

/// `s` cleaned of control characters (tab and line feed kept, CR dropped), valid UTF-8, and at
/// most `max_bytes` bytes of it, cut at a line break where one is near and at a character boundary
/// always; a cut text ends with a line "[cut: N bytes]" naming what was left out.
std::string prompt_text_capped(std::string_view s, size_t max_bytes);

/// The longest run of backticks in `s`.
size_t longest_backtick_run(std::string_view s);

/// `s` (cleaned and capped as prompt_text_capped) between two fences of `info` ("cuda", "python",
/// "text"): the fence is a run of backticks one longer than the longest in the text, at least
/// three. The block ends with a line break.
std::string fenced(std::string_view s, const std::string& info, size_t max_bytes);

}  // namespace ak
