#include "llm/prompt_fence.hpp"

#include <algorithm>

#include "common/untrusted_text.hpp"

namespace ak {

namespace {

/// Where to cut valid UTF-8 `s` to keep at most `limit` bytes: at a character boundary, and at
/// the last line break of the kept part when that loses little (a half line helps nobody).
size_t cut_point(const std::string& s, size_t limit) {
  size_t at = std::min(limit, s.size());
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
  const size_t line = s.rfind('\n', at == 0 ? 0 : at - 1);
  if (line != std::string::npos && at - line < 200) at = line + 1;
  return at;
}

}  // namespace

std::string prompt_text_capped(std::string_view s, size_t max_bytes) {
  std::string clean = untrusted_text(s, s.size() * 3 + 16);   // no cap of its own (U+FFFD is 3 bytes): the cut is said below
  if (clean.size() <= max_bytes) return clean;
  const std::string note_room = "\n[cut: 0000000000 bytes]";
  const size_t keep = cut_point(clean, max_bytes > note_room.size() ? max_bytes - note_room.size() : 0);
  const size_t cut = clean.size() - keep;
  std::string out = clean.substr(0, keep);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + "[cut: " + std::to_string(cut) + " bytes]";
}

size_t longest_backtick_run(std::string_view s) {
  size_t longest = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

std::string fenced(std::string_view s, const std::string& info, size_t max_bytes) {
  std::string body = prompt_text_capped(s, max_bytes);
  if (!body.empty() && body.back() != '\n') body += '\n';
  const std::string fence(std::max<size_t>(3, longest_backtick_run(body) + 1), '`');
  return fence + info + "\n" + body + fence + "\n";
}

}  // namespace ak
