#include "daemon/run_folder/counters_table.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/file_text.hpp"
#include "common/parse_number.hpp"
#include "common/text_escape.hpp"

namespace ak {
namespace {

constexpr const char* kColumns[] = {
    "experiment",  "tag",         "dram_pct",       "sm_pct",           "achieved_occupancy_pct",
    "theoretical_occupancy_pct",  "occupancy_limiter", "l1_hit_pct",    "l2_hit_pct",
    "tensor_pct",  "bank_conflicts", "bank_conflict_ratio", "top_stall", "top_stall_share",
    "registers",   "spill_bytes", "passes",         "bottleneck",       "unavailable"};
constexpr size_t kColumnCount = sizeof kColumns / sizeof kColumns[0];

std::string number(const std::optional<double>& x, const char* format = "%.2f") {
  if (!x) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, *x);
  return buf;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

std::optional<double> optional_decimal(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return parse_decimal(s);
}

}  // namespace

const std::string& counters_header() {
  static const std::string header = [] {
    std::string h;
    for (size_t i = 0; i < kColumnCount; ++i) h += (i ? "\t" : "") + std::string(kColumns[i]);
    return h;
  }();
  return header;
}

std::string format_counters_row(const CountersRow& r) {
  const HardwareCounters& c = r.counters;
  const OccupancyLimit* o = c.occupancy ? &*c.occupancy : nullptr;
  const std::vector<std::string> fields = {
      std::to_string(r.experiment),
      tsv_field(r.tag),
      number(c.dram_pct),
      number(c.sm_pct),
      number(c.achieved_occupancy_pct),
      o ? number(o->theoretical_pct) : "",
      o ? tsv_field(o->limiter) : "",
      number(c.l1_hit_pct),
      number(c.l2_hit_pct),
      number(c.tensor_pct),
      number(c.bank_conflicts, "%.0f"),
      number(c.bank_conflict_ratio, "%.4f"),
      c.stalls.empty() ? "" : c.stalls[0].reason,
      c.stalls.empty() ? "" : number(c.stalls[0].share, "%.4f"),
      std::to_string(r.registers),
      std::to_string(r.spill_bytes),
      std::to_string(c.passes),
      c.available() ? tsv_field(r.bottleneck) : "",
      tsv_field(c.unavailable)};
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "\t" : "") + fields[i];
  return line;
}

Result<CountersRow> parse_counters_row(const std::string& line) {
  const auto f = split_tabs(line);
  if (f.size() != kColumnCount)
    return error("a counters row has " + std::to_string(f.size()) + " fields, expected " + std::to_string(kColumnCount));
  CountersRow r;
  auto experiment = parse_integer(f[0]);
  auto registers = parse_integer(f[14]), spills = parse_integer(f[15]), passes = parse_integer(f[16]);
  if (!experiment || !registers || !spills || !passes) return error("a counters row has a field that is not a number");
  r.experiment = *experiment;
  r.tag = f[1];
  r.registers = int(*registers);
  r.spill_bytes = int(*spills);
  HardwareCounters& c = r.counters;
  r.bottleneck = f[17];
  c.unavailable = f[18];
  c.passes = int(*passes);
  c.dram_pct = optional_decimal(f[2]);
  c.sm_pct = optional_decimal(f[3]);
  c.achieved_occupancy_pct = optional_decimal(f[4]);
  if (!f[5].empty()) {
    c.occupancy = OccupancyLimit{};
    c.occupancy->theoretical_pct = optional_decimal(f[5]).value_or(0);
    c.occupancy->limiter = f[6];
  }
  c.l1_hit_pct = optional_decimal(f[7]);
  c.l2_hit_pct = optional_decimal(f[8]);
  c.tensor_pct = optional_decimal(f[9]);
  c.bank_conflicts = optional_decimal(f[10]);
  c.bank_conflict_ratio = optional_decimal(f[11]);
  if (!f[12].empty()) c.stalls.push_back({f[12], optional_decimal(f[13]).value_or(0)});
  return r;
}

std::string counters_table_path(const std::string& root) { return root + "/counters.tsv"; }

Status append_counters(const std::string& path, const CountersRow& r) {
  std::error_code ec;
  const bool fresh = !std::filesystem::exists(path, ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return error(path + ": cannot append counters: " + std::strerror(errno));
  std::string text = (fresh ? counters_header() + "\n" : "") + format_counters_row(r) + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return error(path + ": writing counters failed: " + std::strerror(errno) + " (disk full?)");
  return ak::ok();
}

std::vector<CountersRow> read_counters_table(const std::string& path) {
  std::vector<CountersRow> rows;
  auto text = read_file_text(path);
  if (!text) return rows;
  std::istringstream in(*text);
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      header = false;
      continue;
    }
    if (auto r = parse_counters_row(line)) rows.push_back(std::move(*r));
  }
  return rows;
}

}  // namespace ak
