#include "harness/compile/compile_log_filter.hpp"

#include <regex>
#include <sstream>

namespace ak {
namespace {

/// "file(12): error: ..." and its kin open a diagnostic; the lines up to the next one belong to it.
bool diagnostic_file(const std::string& line, std::string& file) {
  static const std::regex head(R"(^(.+?)\((\d+)\): (error|warning|remark|note|catastrophic error|internal error)\b)");
  std::smatch m;
  if (!std::regex_search(line, m, head)) return false;
  file = m[1];
  return true;
}

/// A file the log may quote: the candidate itself, or a header under CUDA's folder (by its text,
/// with no `..` to climb out of it).
bool may_quote(const std::string& file, const std::string& candidate, const std::string& cuda_include) {
  if (file == candidate) return true;
  const std::string root = cuda_include.back() == '/' ? cuda_include : cuda_include + "/";
  return file.rfind(root, 0) == 0 && file.find("/../") == std::string::npos;
}

}  // namespace

std::string keep_candidate_text(const std::string& log, const std::string& candidate, const std::string& cuda_include) {
  std::istringstream in(log);
  std::string out, line, file;
  bool keeping = true;
  size_t removed = 0;
  while (std::getline(in, line)) {
    if (diagnostic_file(line, file)) keeping = may_quote(file, candidate, cuda_include);
    // ptxas speaks of the PTX compiled from the candidate (and CUDA's headers), never of another file.
    else if (line.find(" detected in the compilation of ") != std::string::npos || line.rfind("ptxas", 0) == 0) keeping = true;
    if (keeping) out += line + "\n";
    else ++removed;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (removed)
    out += "\n(" + std::to_string(removed) + " line" + (removed == 1 ? "" : "s") + " quoting other files removed)";
  return out;
}

}  // namespace ak
