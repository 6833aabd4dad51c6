#include "harness/compile/ptxas_log.hpp"

#include <algorithm>
#include <limits>
#include <regex>
#include <sstream>

#include "common/parse_number.hpp"

namespace ak {
namespace {

/// "ptxas info    : ..." and "ptxas         .     0 bytes stack frame, ...": what -v adds to a
/// compile that has nothing to say.
bool ptxas_statistics(const std::string& line) {
  static const std::regex statistics(R"(^ptxas\s+(info\s*:|\.))");
  return std::regex_search(line, statistics);
}

/// One number of a statistics line; a line a candidate forged with a number past an int (through a
/// #pragma message) reads as the largest int rather than ending the worker.
int statistic(const std::string& digits) {
  auto v = parse_integer(digits);
  return v && *v >= 0 && *v <= std::numeric_limits<int>::max() ? int(*v) : std::numeric_limits<int>::max();
}

void read_statistics(const std::string& line, std::vector<FunctionInfo>& functions, FunctionInfo*& current) {
  static const std::regex entry(R"(Function properties for (\S+))");
  static const std::regex compiling(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::smatch m;
  if (std::regex_search(line, m, compiling) || std::regex_search(line, m, entry)) {
    current = nullptr;
    for (auto& f : functions)
      if (f.lowered_name == m[1].str()) current = &f;
  } else if (current && std::regex_search(line, m, frame)) {
    current->stack_bytes = statistic(m[1]);
    current->spill_stores = statistic(m[2]);
    current->spill_loads = statistic(m[3]);
  } else if (current && std::regex_search(line, m, regs)) {
    current->registers = statistic(m[1]);
    if (std::regex_search(line, m, smem)) current->static_smem_bytes = statistic(m[1]);
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

/// The PTX's `.file N "path"` table: the indices whose path is the kernel file.
std::vector<int> file_indices(const std::vector<std::string>& ptx, const std::string& filename) {
  static const std::regex file(R"(^\s*\.file\s+(\d+)\s+\"([^\"]*)\")");
  std::vector<int> out;
  std::smatch m;
  for (auto& line : ptx) {
    if (!std::regex_search(line, m, file)) continue;
    const std::string path = m[2];
    const bool ours = path == filename || (path.size() > filename.size() &&
                                           path.compare(path.size() - filename.size(), filename.size(), filename) == 0 &&
                                           path[path.size() - filename.size() - 1] == '/');
    int index = 0;
    if (ours && parse_count(m[1], index)) out.push_back(index);
  }
  return out;
}

/// The kernel file's line that PTX line `n` (1-based) was compiled from: the last `.loc` before it
/// that names the file; 0 when none does.
int source_line(const std::vector<std::string>& ptx, size_t n, const std::vector<int>& files) {
  static const std::regex loc(R"(^\s*\.loc\s+(\d+)\s+(\d+))");
  std::smatch m;
  for (size_t i = std::min(n, ptx.size()); i-- > 0;) {
    if (!std::regex_search(ptx[i], m, loc)) continue;
    int file = 0, line = 0;
    if (!parse_count(m[1], file) || !parse_count(m[2], line)) return 0;
    return std::find(files.begin(), files.end(), file) != files.end() ? line : 0;
  }
  return 0;
}

}  // namespace

bool parse_count(const std::string& text, int& out) {
  auto v = parse_integer(text);
  if (!v || *v < 0 || *v > std::numeric_limits<int>::max()) return false;
  out = int(*v);
  return true;
}

std::string split_ptxas_log(const std::string& log, std::vector<FunctionInfo>& functions) {
  std::string diagnostics;
  FunctionInfo* current = nullptr;
  for (const std::string& line : lines_of(log)) {
    if (ptxas_statistics(line)) read_statistics(line, functions, current);
    else diagnostics += line + "\n";
  }
  while (!diagnostics.empty() && diagnostics.back() == '\n') diagnostics.pop_back();
  return diagnostics;
}

std::string annotate_ptxas_lines(const std::string& diagnostics, const std::string& ptx, const std::string& filename) {
  static const std::regex names_line(R"(^ptxas\b.*, line (\d+);)");
  const std::vector<std::string> code = lines_of(ptx);
  const std::vector<int> files = file_indices(code, filename);
  std::string out;
  std::smatch m;
  for (const std::string& line : lines_of(diagnostics)) {
    out += line + "\n";
    int n = 0;
    if (!std::regex_search(line, m, names_line) || !parse_count(m[1], n) || n < 1 || size_t(n) > code.size()) continue;
    const int from = source_line(code, size_t(n), files);
    out += "    at " + (from ? filename + " line " + std::to_string(from) + ", " : std::string()) + "PTX line " +
           std::to_string(n) + ": " + trimmed(code[size_t(n) - 1]).substr(0, 300) + "\n";
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace ak
