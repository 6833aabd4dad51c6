#pragma once
// Reading a prompt as a model's Markdown reader does: which lines are the prompt's own and which
// are quoted inside a fenced block.
#include <string>
#include <vector>

namespace ak::test {

/// The lines of `text` outside every fenced code block, by CommonMark's rule: a block opens on a
/// line of three or more backticks (after up to three spaces) and closes only on a line of at
/// least as many backticks and nothing else.
inline std::vector<std::string> lines_outside_fences(const std::string& text) {
  std::vector<std::string> out;
  size_t open = 0;   // the opening fence's length; 0: outside
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    size_t i = 0;
    while (i < 3 && i < line.size() && line[i] == ' ') ++i;
    size_t ticks = 0;
    while (i + ticks < line.size() && line[i + ticks] == '`') ++ticks;
    const bool only_ticks = line.find_first_not_of(" `") == std::string::npos;
    if (open == 0 && ticks >= 3) open = ticks;
    else if (open > 0 && ticks >= open && only_ticks) open = 0;
    else if (open == 0) out.push_back(line);
    pos = nl + 1;
  }
  return out;
}

/// Whether `needle` appears in a line of `text` outside every fenced block.
inline bool outside_fences_contains(const std::string& text, const std::string& needle) {
  for (const std::string& l : lines_outside_fences(text))
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace ak::test
