#include "daemon/loop/results_table.hpp"
#include "daemon/loop/run_directory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text_escape.hpp"

namespace ak {
namespace {

std::string clean(const std::string& s) { return tsv_field(s); }

std::string num(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i)
    if (i == line.size() || line[i] == '\t') {
      f.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  return f;
}

}  // namespace

const std::string& results_header() {
  static const std::string h =
      "experiment\ttag\tkernel_type\tthroughput\tlatency_us\tpct_peak\tspeedup_vs_baseline\tcorrectness\t"
      "peak_vram_mb\tkept\tcommit\tllm_tokens\tseconds\tdescription\tpaired_best_us\tpaired_ratio\tpaired_noise\tmove\tfailure";
  return h;
}

const char* move_name(MoveKind m) {
  return m == MoveKind::Structure ? "structure" : m == MoveKind::Baseline ? "baseline" : "edit";
}

namespace {

/// The header before the paired columns were added; its rows have 14 fields.
const std::string& header_v1() {
  static const std::string h = results_header().substr(0, results_header().find("\tpaired_best_us"));
  return h;
}

/// The header before the move and failure columns; its rows have 17 fields.
const std::string& header_v2() {
  static const std::string h = results_header().substr(0, results_header().find("\tmove"));
  return h;
}

/// A row of an older table: what the daemon then wrote into its description alone.
void read_legacy_description(ResultRow& r) {
  if (r.description.rfind("baseline: the starter", 0) == 0) r.move = MoveKind::Baseline;
  else if (r.description.rfind("structure: ", 0) == 0) r.move = MoveKind::Structure;
  if (const size_t cut = r.description.find(" -- "); cut != std::string::npos) {
    r.failure = r.description.substr(cut + 4);
    r.description.resize(cut);
  }
}

Result<MoveKind> parse_move(const std::string& s) {
  if (s == "edit") return MoveKind::Edit;
  if (s == "structure") return MoveKind::Structure;
  if (s == "baseline") return MoveKind::Baseline;
  return error("the move field is '" + s + "', not edit, structure or baseline");
}

}  // namespace

std::string format_row(const ResultRow& r) {
  return std::to_string(r.experiment) + "\t" + clean(r.tag) + "\t" + clean(r.kernel_type) + "\t" +
         num(r.throughput, 2) + "\t" + num(r.latency_us, 3) + "\t" + num(r.pct_peak, 4) + "\t" +
         num(r.speedup, 4) + "\t" + clean(r.correctness) + "\t" + num(r.peak_vram_mb, 1) + "\t" +
         (r.kept ? "yes" : "no") + "\t" + clean(r.commit) + "\t" + std::to_string(r.llm_tokens) + "\t" +
         num(r.seconds, 2) + "\t" + clean(r.description) + "\t" + num(r.paired_best_us, 3) + "\t" +
         num(r.paired_ratio, 5) + "\t" + num(r.paired_noise, 5) + "\t" + move_name(r.move) + "\t" + clean(r.failure);
}

Result<ResultRow> parse_row(const std::string& line) {
  auto f = split_tabs(line);
  if (f.size() != 14 && f.size() != 17 && f.size() != 19)
    return error("expected 19 tab-separated fields (14 or 17 in older tables), found " + std::to_string(f.size()));
  try {
    ResultRow r;
    r.experiment = std::stoll(f[0]);
    r.tag = f[1];
    r.kernel_type = f[2];
    r.throughput = std::stod(f[3]);
    r.latency_us = std::stod(f[4]);
    r.pct_peak = std::stod(f[5]);
    r.speedup = std::stod(f[6]);
    r.correctness = f[7];
    r.peak_vram_mb = std::stod(f[8]);
    r.kept = f[9] == "yes";
    r.commit = f[10];
    r.llm_tokens = std::stoll(f[11]);
    r.seconds = std::stod(f[12]);
    r.description = f[13];
    if (f.size() >= 17) {
      r.paired_best_us = std::stod(f[14]);
      r.paired_ratio = std::stod(f[15]);
      r.paired_noise = std::stod(f[16]);
    }
    if (f.size() < 19) {
      read_legacy_description(r);
      return r;
    }
    auto move = parse_move(f[17]);
    if (!move) return move.error();
    r.move = *move;
    r.failure = f[18];
    return r;
  } catch (const std::exception&) {
    return error("a field is not a number where one is expected");
  }
}

namespace {

/// The whole rows of a table and the length of the text they take.
Result<std::pair<std::vector<ResultRow>, size_t>> parse_table(const std::string& path, const std::string& text,
                                                               bool* old_header = nullptr) {
  std::vector<ResultRow> rows;
  size_t pos = 0, good_end = 0;
  bool header = true;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a last line without its newline was cut short
    std::string line = text.substr(pos, nl - pos);
    if (header) {
      if ((line == header_v1() || line == header_v2()) && old_header) *old_header = true;
      else if (line != results_header() && line != header_v1() && line != header_v2())
        return error(path + ": the first line is not autokernel's results header; is this a results.tsv of another tool?");
      header = false;
    } else {
      auto row = parse_row(line);
      if (!row) break;  // a damaged row ends the table; what follows it is dropped with it
      rows.push_back(*row);
    }
    pos = nl + 1;
    good_end = pos;
  }
  return std::make_pair(std::move(rows), good_end);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::vector<ResultRow>> read_results(const std::string& path) {
  if (!std::filesystem::exists(path)) return error(path + ": no results table (is this a run folder?)");
  auto t = parse_table(path, slurp(path));
  if (!t) return t.error();
  return t->first;
}

Result<std::vector<ResultRow>> open_results(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::exists(path)) {
    const std::string text = slurp(path);
    bool old_header = false;
    auto t = parse_table(path, text, &old_header);
    if (!t) return t.error();
    if (old_header) {
      std::string upgraded = results_header() + "\n";
      for (auto& r : t->first) upgraded += format_row(r) + "\n";
      if (auto s = write_file_atomic(path, upgraded); !s) return s.error();
    } else if (t->second == 0) {  // empty, or the header cut short: start the table again
      std::ofstream(path, std::ios::trunc) << results_header() << "\n";
    } else if (t->second < text.size()) {
      fs::resize_file(path, t->second);
    }
    return t->first;
  }
  std::ofstream out(path);
  out << results_header() << "\n";
  if (!out) return error(path + ": cannot create the results table (is the run folder writable?)");
  return std::vector<ResultRow>{};
}

Status append_result(const std::string& path, const ResultRow& r) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return error(path + ": cannot append a result: " + std::strerror(errno));
  std::string line = format_row(r) + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == ssize_t(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return error(path + ": writing a result failed: " + std::strerror(errno) + " (disk full?)");
  return ak::ok();
}

}  // namespace ak
