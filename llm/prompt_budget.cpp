#include "llm/prompt_budget.hpp"

#include <algorithm>

#include "llm/prompt_fence.hpp"

namespace ak {

std::string PromptPart::value() const {
  if (is_text) {
    if (fence_info.empty()) return prompt_text_capped(text, cap);
    return fenced(text, fence_info, cap);
  }
  if (entries.empty() && dropped == 0) return empty_text;
  std::string v;
  if (dropped) v = "(" + std::to_string(dropped) + " older entr" + (dropped == 1 ? "y" : "ies") + " left out to fit the prompt's size)";
  for (const std::string& e : entries) v += (v.empty() ? "" : separator) + e;
  return v;
}

PromptPart list_part(std::string placeholder, int priority, std::string what, std::vector<std::string> entries,
                     std::string empty_text) {
  PromptPart p;
  p.placeholder = std::move(placeholder);
  p.priority = priority;
  p.what = std::move(what);
  p.entries = std::move(entries);
  p.empty_text = std::move(empty_text);
  return p;
}

PromptPart text_part(std::string placeholder, int priority, std::string what, std::string text, std::string fence_info,
                     size_t cap) {
  PromptPart p;
  p.placeholder = std::move(placeholder);
  p.priority = priority;
  p.what = std::move(what);
  p.is_text = true;
  p.text = std::move(text);
  p.fence_info = std::move(fence_info);
  p.cap = cap;
  return p;
}

std::map<std::string, std::string> part_values(const std::vector<PromptPart>& parts) {
  std::map<std::string, std::string> v;
  for (const PromptPart& p : parts) v[p.placeholder] = p.value();
  return v;
}

namespace {

bool can_shrink(const PromptPart& p) {
  if (p.is_text) return p.cap > kSmallestTextPart && prompt_text_capped(p.text, p.cap).size() > kSmallestTextPart;
  return !p.entries.empty();
}

/// Shrinks `p` by about `over` bytes: a list by its oldest entries (as many as hold `over` bytes,
/// at least one), a text by `over` (at least a tenth of it, so the loop ends quickly), never below
/// kSmallestTextPart.
void shrink(PromptPart& p, size_t over) {
  if (!p.is_text) {
    size_t n = 0, bytes = 0;
    while (n < p.entries.size() && (n == 0 || bytes < over)) bytes += p.entries[n++].size() + p.separator.size();
    p.entries.erase(p.entries.begin(), p.entries.begin() + long(n));
    p.dropped += n;
    return;
  }
  const size_t now = std::min(p.cap, p.text.size());
  const size_t step = std::max(over, now / 10);
  const size_t next = now > step + kSmallestTextPart ? now - step : kSmallestTextPart;
  p.cut_bytes += now - std::min(now, next);
  p.cap = next;
}

}  // namespace

std::string fit_prompt_parts(std::vector<PromptPart>& parts, size_t max_bytes,
                             const std::function<size_t(const std::map<std::string, std::string>&)>& measure) {
  for (;;) {
    const size_t size = measure(part_values(parts));
    if (size <= max_bytes) break;
    PromptPart* least = nullptr;
    for (PromptPart& p : parts)
      if (can_shrink(p) && (!least || p.priority < least->priority)) least = &p;
    if (!least) break;   // nothing left to shorten: the fixed parts alone are over the limit
    shrink(*least, size - max_bytes);
  }
  std::string said;
  for (const PromptPart& p : parts) {
    std::string one;
    if (p.dropped) one = std::to_string(p.dropped) + " of the " + p.what;
    else if (p.cut_bytes) one = "the end of " + p.what + " (about " + std::to_string(p.cut_bytes) + " bytes)";
    if (!one.empty()) said += (said.empty() ? "" : "; ") + one;
  }
  if (said.empty()) return "";
  return "(This prompt was shortened to fit its size limit of " + std::to_string(max_bytes) + " bytes; left out: " + said + ".)";
}

}  // namespace ak
