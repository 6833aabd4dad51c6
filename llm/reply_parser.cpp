#include "llm/reply_parser.hpp"

#include <cctype>
#include <sstream>
#include <vector>

#include "common/parse_number.hpp"
#include "common/untrusted_text.hpp"

namespace ak {
namespace {

bool is_code_fence(const std::string& info) {
  return info == "cuda" || info == "cpp" || info == "c++" || info == "cu" || info == "c";
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

size_t backticks_at_start(const std::string& t) {
  size_t n = 0;
  while (n < t.size() && t[n] == '`') ++n;
  return n;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

/// The text after "Name:" when `line` is that header (any case, markdown emphasis around the
/// name allowed: "**Hypothesis:**"); nullopt otherwise.
std::optional<std::string> header_value(const std::string& line, const char* name) {
  std::string t = line;
  size_t i = 0;
  while (i < t.size() && (t[i] == '*' || t[i] == '#' || t[i] == '_' || t[i] == ' ')) ++i;
  const std::string n = lower(name);
  if (lower(t.substr(i, n.size())) != n) return std::nullopt;
  i += n.size();
  while (i < t.size() && (t[i] == '*' || t[i] == '_')) ++i;
  if (i >= t.size() || t[i] != ':') return std::nullopt;
  ++i;
  while (i < t.size() && (t[i] == '*' || t[i] == '_')) ++i;
  return trim(t.substr(i));
}

/// The model thinking aloud, not stating its change: never the experiment's description.
bool thinking_aloud(const std::string& line) {
  const std::string l = lower(line);
  for (const char* p : {"let me", "let's", "i'll", "i will", "i need", "i think", "first,", "okay", "ok,", "alright",
                        "looking at", "analyzing", "analysing", "to analyze", "here is", "here's", "now,", "sure"})
    if (l.rfind(p, 0) == 0) return true;
  return false;
}

/// "12.5 us", "12.5us", "~12.5 µs", "0.0125 ms", "12500 ns": microseconds; 0 when no time can be read.
double predicted_microseconds(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && !std::isdigit((unsigned char)text[i])) ++i;
  size_t j = i;
  while (j < text.size() && (std::isdigit((unsigned char)text[j]) || text[j] == '.')) ++j;
  auto v = parse_decimal(text.substr(i, j - i), false);
  if (!v || !(*v > 0) || *v > 1e9) return 0;
  std::string unit = lower(trim(text.substr(j)));
  if (unit.rfind("ms", 0) == 0) return *v * 1000;
  if (unit.rfind("ns", 0) == 0) return *v / 1000;
  return *v;
}

bool another_header(const std::string& t) {
  for (const char* h : {"hypothesis", "description", "predicted", "prediction", "show", "scratchpad"})
    if (header_value(t, h)) return true;
  return false;
}

}  // namespace

Result<ProposedEdit> parse_reply(const std::string& reply, bool truncated, const std::string& entry) {
  if (truncated)
    return error("the reply was cut off at the output token limit, so its kernel file is incomplete "
                 "(raise [llm] max_output_tokens, or ask for shorter files)");
  std::istringstream in(reply);
  std::string line, hypothesis, first_line, block, current, show, scratch;
  bool inside = false, code = false, found = false, in_scratch = false, has_scratch = false;
  size_t fence = 0;
  double predicted = 0;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (!inside && backticks_at_start(t) >= 3) {
      inside = true;
      in_scratch = false;
      fence = backticks_at_start(t);
      code = is_code_fence(trim(t.substr(fence)));
      current.clear();
      continue;
    }
    if (inside && backticks_at_start(t) >= fence && backticks_at_start(t) == t.size()) {
      inside = false;
      if (code) block = current, found = true;
      continue;
    }
    if (inside) {
      current += line + "\n";
      continue;
    }
    if (in_scratch && (t.empty() || another_header(t))) in_scratch = false;
    if (in_scratch) {
      scratch += t + "\n";
      continue;
    }
    if (auto v = header_value(t, "hypothesis"); v && hypothesis.empty()) hypothesis = *v;
    else if (auto d = header_value(t, "description"); d && hypothesis.empty()) hypothesis = *d;
    else if (auto p = header_value(t, "predicted"); p && predicted == 0) predicted = predicted_microseconds(*p);
    else if (auto p2 = header_value(t, "prediction"); p2 && predicted == 0) predicted = predicted_microseconds(*p2);
    else if (auto s = header_value(t, "show"); s && show.empty()) show = *s;
    else if (auto sp = header_value(t, "scratchpad"); sp) {
      in_scratch = has_scratch = true;
      scratch = sp->empty() ? "" : *sp + "\n";
    } else if (first_line.empty() && !t.empty() && !thinking_aloud(t)) {
      first_line = t;
    }
  }
  if (!found)
    return error(inside ? "the reply's last code block is not closed (the answer was cut short)"
                        : "the reply has no ```cuda code block with the kernel file");
  if (trim(block).empty()) return error("the reply's code block is empty");
  // A user type's file with a launch plan names its own steps (the harness checks them).
  if (block.find(entry) == std::string::npos && block.find("ak_launch") == std::string::npos)
    return error("the proposed file does not define the entry point '" + entry + "' (nor an ak_launch plan of steps)");
  if (auto problem = kernel_file_problem(block)) return error("the proposed file was refused: " + *problem);
  ProposedEdit e;
  e.description = untrusted_line(hypothesis.empty() ? first_line : hypothesis, kDescriptionBytes);
  if (e.description.empty()) e.description = "(no description given)";
  e.source = block;
  e.predicted_us = predicted;
  while (!scratch.empty() && (scratch.back() == '\n' || scratch.back() == ' ')) scratch.pop_back();
  if (has_scratch) e.scratchpad = untrusted_text(scratch, kScratchpadBytes);
  e.show = untrusted_line(show, 80);
  return e;
}

}  // namespace ak
