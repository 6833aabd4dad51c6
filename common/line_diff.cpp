#include "common/line_diff.hpp"

#include <algorithm>
#include <vector>

namespace ak {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

/// One line of the edit script: ' ' kept, '-' only in `from`, '+' only in `to`.
struct Op {
  char kind;
  size_t from_line, to_line;   ///< 0-based positions the line has (or would have) on each side
};

/// The edit script of a and b by longest common subsequence over the lines between their common
/// prefix and suffix (an edit is usually local, so that middle is small); a middle too large for
/// the table is replaced whole.
std::vector<Op> edit_script(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<Op> ops;
  for (size_t i = 0; i < pre; ++i) ops.push_back({' ', i, i});
  if (n * m <= 4'000'000) {
    std::vector<std::vector<unsigned>> lcs(n + 1, std::vector<unsigned>(m + 1, 0));
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        lcs[i][j] = a[pre + i] == b[pre + j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[pre + i] == b[pre + j]) ops.push_back({' ', pre + i++, pre + j++});
      else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) ops.push_back({'-', pre + i++, pre + j});   // removals first, as diff -u
      else ops.push_back({'+', pre + i, pre + j++});
    }
  } else {
    for (size_t i = 0; i < n; ++i) ops.push_back({'-', pre + i, pre});
    for (size_t j = 0; j < m; ++j) ops.push_back({'+', pre + n, pre + j});
  }
  for (size_t k = 0; k < suf; ++k) ops.push_back({' ', pre + n + k, pre + m + k});
  return ops;
}

}  // namespace

std::string unified_diff(const std::string& from, const std::string& to, const std::string& from_name,
                         const std::string& to_name, int context) {
  const auto a = lines_of(from), b = lines_of(to);
  const std::vector<Op> ops = edit_script(a, b);
  std::string out;
  const size_t ctx = size_t(std::max(context, 0));
  size_t k = 0;
  while (k < ops.size()) {
    if (ops[k].kind == ' ') {
      ++k;
      continue;
    }
    // A hunk: from `ctx` lines before this change to `ctx` lines after the last change that is
    // within 2*ctx kept lines of the one before it.
    const size_t begin = k >= ctx ? k - ctx : 0;
    size_t end = k, kept_run = 0;
    for (size_t j = k; j < ops.size(); ++j) {
      if (ops[j].kind == ' ') {
        if (++kept_run > 2 * ctx) break;
      } else {
        kept_run = 0;
        end = j;
      }
    }
    const size_t stop = std::min(ops.size(), end + 1 + ctx);
    size_t from_count = 0, to_count = 0;
    for (size_t j = begin; j < stop; ++j) {
      if (ops[j].kind != '+') ++from_count;
      if (ops[j].kind != '-') ++to_count;
    }
    if (out.empty()) out = "--- " + from_name + "\n+++ " + to_name + "\n";
    out += "@@ -" + std::to_string(ops[begin].from_line + (from_count ? 1 : 0)) + "," + std::to_string(from_count) + " +" +
           std::to_string(ops[begin].to_line + (to_count ? 1 : 0)) + "," + std::to_string(to_count) + " @@\n";
    for (size_t j = begin; j < stop; ++j) {
      const std::string& text = ops[j].kind == '+' ? b[ops[j].to_line] : a[ops[j].from_line];
      out += ops[j].kind + text + "\n";
    }
    k = stop;
  }
  return out;
}

}  // namespace ak
