#include "daemon/run_folder/results_table.hpp"
#include "common/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>

#include <spdlog/spdlog.h>

#include "common/file_text.hpp"
#include "common/parse_number.hpp"
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
      "peak_vram_mb\tkept\tcommit\tllm_tokens\tseconds\tdescription\tpaired_best_us\tpaired_ratio\tpaired_noise\tmove\tfailure\tpredicted_us";
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

/// The header before the predicted_us column; its rows have 19 fields.
const std::string& header_v3() {
  static const std::string h = results_header().substr(0, results_header().find("\tpredicted_us"));
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
         num(r.paired_ratio, 5) + "\t" + num(r.paired_noise, 5) + "\t" + move_name(r.move) + "\t" + clean(r.failure) + "\t" +
         num(r.predicted_us, 3);
}

namespace {

/// Reads fields in order, each checked whole; the first bad one names its column and its text.
class FieldReader {
 public:
  explicit FieldReader(const std::vector<std::string>& f) : f_(f) {}
  long long integer(size_t i) {
    auto v = parse_integer(f_[i]);
    if (!v) fail(i, "an integer");
    return v.value_or(0);
  }
  double number(size_t i) {
    auto v = parse_decimal(f_[i], false);   // printf's "nan" of a NaN the daemon measured reads back
    if (!v) fail(i, "a number");
    return v.value_or(0);
  }
  const std::optional<std::string>& problem() const { return problem_; }

 private:
  void fail(size_t i, const char* expected) {
    if (problem_) return;
    const std::string name = split_tabs(results_header())[i];
    problem_ = name + " is '" + tsv_field(f_[i].substr(0, 40)) + (f_[i].size() > 40 ? "...'" : "'") + ": expected " + expected;
  }
  const std::vector<std::string>& f_;
  std::optional<std::string> problem_;
};

}  // namespace

Result<ResultRow> parse_row(const std::string& line) {
  auto f = split_tabs(line);
  if (f.size() != 14 && f.size() != 17 && f.size() != 19 && f.size() != 20)
    return error("expected 20 tab-separated fields (14, 17 or 19 in older tables), found " + std::to_string(f.size()));
  FieldReader read(f);
  ResultRow r;
  r.experiment = read.integer(0);
  r.tag = f[1];
  r.kernel_type = f[2];
  r.throughput = read.number(3);
  r.latency_us = read.number(4);
  r.pct_peak = read.number(5);
  r.speedup = read.number(6);
  r.correctness = f[7];
  r.peak_vram_mb = read.number(8);
  r.kept = f[9] == "yes";
  r.commit = f[10];
  r.llm_tokens = read.integer(11);
  r.seconds = read.number(12);
  r.description = f[13];
  if (f.size() >= 17) {
    r.paired_best_us = read.number(14);
    r.paired_ratio = read.number(15);
    r.paired_noise = read.number(16);
  }
  if (f.size() >= 20) r.predicted_us = read.number(19);
  if (read.problem()) return error(*read.problem());
  if (f[9] != "yes" && f[9] != "no") return error("kept is '" + tsv_field(f[9].substr(0, 40)) + "': expected yes or no");
  if (f.size() < 19) {
    read_legacy_description(r);
    return r;
  }
  auto move = parse_move(f[17]);
  if (!move) return move.error();
  r.move = *move;
  r.failure = f[18];
  return r;
}

namespace {

/// A table read: its rows with the lines that hold them, its damaged lines, and how it starts.
struct ParsedTable {
  ResultsTable table;
  std::vector<std::string> row_lines;   ///< the text of each row, as written
  bool old_header = false;
  bool header_whole = false;            ///< false: empty, or the header itself cut short
};

Result<ParsedTable> parse_table(const std::string& path, const std::string& text) {
  ParsedTable t;
  size_t pos = 0, number = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    const bool torn = nl == std::string::npos;   // a last line without its newline was cut short
    std::string line = text.substr(pos, torn ? std::string::npos : nl - pos);
    ++number;
    if (number == 1) {
      if (torn) break;   // the header itself cut short: the table starts again
      t.old_header = line == header_v1() || line == header_v2() || line == header_v3();
      if (line != results_header() && !t.old_header)
        return error(path + ": the first line is not autokernel's results header; is this a results.tsv of another tool?");
      t.header_whole = true;
    } else if (torn) {
      t.table.damaged.push_back({number, line, "cut short (no newline at its end): the daemon stopped while writing it"});
    } else if (auto row = parse_row(line); !row) {
      t.table.damaged.push_back({number, line, row.error().message});
    } else {
      t.table.rows.push_back(*row);
      t.row_lines.push_back(line);
    }
    if (torn) break;
    pos = nl + 1;
  }
  return t;
}

/// The table's text, or an Error; a missing table is `missing`.
Result<std::string> table_text(const std::string& path, const std::string& missing) {
  auto text = read_file_text(path);
  if (text) return text;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return error(missing);
  return error(text.error().message + " (the results table)");
}

/// Appends the damaged lines to results.damaged.tsv, synced, before the table loses them.
Status keep_aside(const std::string& path, const std::vector<DamagedRow>& damaged) {
  const std::string aside = damaged_rows_path(path);
  std::string text;
  for (auto& d : damaged) text += d.text + "\n";
  int fd = ::open(aside.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return error(aside + ": cannot keep the damaged rows of " + path + " aside: " + std::strerror(errno));
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return error(aside + ": cannot keep the damaged rows of " + path + " aside: " + std::strerror(errno) + " (disk full?)");
  for (auto& d : damaged)
    spdlog::warn("{} line {} is not a row ({}): moved to {}; the rows after it are kept", path, d.line, terminal_safe(d.why), aside);
  return ak::ok();
}

}  // namespace

std::string damaged_rows_path(const std::string& results_path) {
  const std::string suffix = ".tsv";
  const bool tsv = results_path.size() >= suffix.size() && results_path.compare(results_path.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (tsv ? results_path.substr(0, results_path.size() - suffix.size()) : results_path) + ".damaged.tsv";
}

Result<ResultsTable> read_results_table(const std::string& path) {
  auto text = table_text(path, path + ": no results table (is this a run folder?)");
  if (!text) return text.error();
  auto t = parse_table(path, *text);
  if (!t) return t.error();
  return std::move(t->table);
}

Result<std::vector<ResultRow>> read_results(const std::string& path) {
  auto t = read_results_table(path);
  if (!t) return t.error();
  if (!t->damaged.empty())
    return error(path + " line " + std::to_string(t->damaged.front().line) + " is not a row: " + t->damaged.front().why);
  return std::move(t->rows);
}

Result<std::vector<ResultRow>> open_results(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) {
    if (auto s = write_file_atomic(path, results_header() + "\n"); !s)
      return error(path + ": cannot create the results table (is the run folder writable?): " + s.error().message);
    return std::vector<ResultRow>{};
  }
  auto text = read_file_text(path);
  if (!text) return error(text.error().message + " (the results table)");
  auto t = parse_table(path, *text);
  if (!t) return t.error();
  if (!t->table.damaged.empty())
    if (auto s = keep_aside(path, t->table.damaged); !s) return s.error();
  if (!t->header_whole || t->old_header || !t->table.damaged.empty()) {
    // Rewritten whole (atomically): the current header, then each row as it was written, or in
    // the current columns when the header was an older one.
    std::string table = results_header() + "\n";
    for (size_t i = 0; i < t->table.rows.size(); ++i)
      table += (t->old_header ? format_row(t->table.rows[i]) : t->row_lines[i]) + "\n";
    if (auto s = write_file_atomic(path, table); !s) return s.error();
  }
  return std::move(t->table.rows);
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
