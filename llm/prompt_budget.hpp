#pragma once
/// Fitting a prompt into `[llm] max_prompt_bytes`: its parts that may shrink are shortened, the
/// least useful first, until the whole fits, and what was left out is said in one line the model
/// reads. A list (ledger lines, failures) loses its oldest entries first; a text (a reference
/// source, the best file) is cut at its end, inside its fence, never below a few hundred bytes.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ak {

struct PromptPart {
  std::string placeholder;            ///< the {{name}} it fills
  int priority = 0;                   ///< lower is cut first
  std::string what;                   ///< "older failures", for the line that says what was cut
  /// A list: entries joined by `separator`, dropped oldest (first) first.
  std::vector<std::string> entries;
  std::string separator = "\n";
  std::string empty_text = "(none)";  ///< the value of a list with no entries at all
  /// A text: `text` fenced with `fence_info` (llm/prompt_fence.hpp) and capped at `cap`; a text
  /// part has no entries. An empty fence_info leaves the text unfenced (the project's own words).
  bool is_text = false;
  std::string text, fence_info;
  size_t cap = 0;

  // What fitting left out (filled by fit_prompt_parts).
  size_t dropped = 0;                 ///< entries dropped
  size_t cut_bytes = 0;               ///< bytes of text cut

  /// The part's value as the template gets it.
  std::string value() const;
};

/// A list part: `entries` joined by line breaks, `empty_text` when there are none.
PromptPart list_part(std::string placeholder, int priority, std::string what, std::vector<std::string> entries,
                     std::string empty_text);
/// A text part, fenced with `fence_info` ("" for the project's own words) and capped at `cap`.
PromptPart text_part(std::string placeholder, int priority, std::string what, std::string text, std::string fence_info,
                     size_t cap);

/// Shortens `parts` until `measure(values)` is at most `max_bytes`, and returns the line that says
/// what was left out ("" when nothing was). `measure` renders the whole prompt from the values
/// and returns its size; the line itself is counted by the caller's reserve.
std::string fit_prompt_parts(std::vector<PromptPart>& parts, size_t max_bytes,
                             const std::function<size_t(const std::map<std::string, std::string>&)>& measure);

/// The values of `parts`, by placeholder.
std::map<std::string, std::string> part_values(const std::vector<PromptPart>& parts);

/// The least a text part is cut to.
inline constexpr size_t kSmallestTextPart = 400;

}  // namespace ak
