#include "daemon/run_folder/commit_trailers.hpp"

#include "common/format.hpp"
#include "common/parse_number.hpp"
#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"

namespace ak {

std::string commit_message(const ResultRow& row, double previous_best_us, const std::string& unit) {
  // The subject is one line of text with no NUL (libgit2 takes a C string): a description can
  // neither cut the message before its trailers nor add a line that reads as one.
  std::string m = "experiment " + std::to_string(row.experiment) + ": " + row.tag + ": " +
                  tsv_field(untrusted_line(row.description, kDescriptionBytes)) + "\n\n";
  m += format_numbers("%.2f us, %.1f ", row.latency_us, row.throughput) + unit + format_numbers(", %.1f%% of peak", row.pct_peak * 100);
  if (previous_best_us > 0)
    m += format_numbers(": %+.1f%% time vs the previous best (%.2f us)", (row.latency_us / previous_best_us - 1) * 100, previous_best_us);
  m += "\n\n";
  m += "Autokernel-Experiment: " + std::to_string(row.experiment) + "\n";
  m += "Autokernel-Kernel: " + row.tag + "\n";
  m += "Autokernel-Type: " + row.kernel_type + "\n";
  m += std::string("Autokernel-Move: ") + move_name(row.move) + "\n";
  m += format_numbers("Autokernel-Latency-Us: %.3f\n", row.latency_us);
  m += format_numbers("Autokernel-Throughput: %.2f\n", row.throughput);
  m += format_numbers("Autokernel-Pct-Peak: %.4f\n", row.pct_peak);
  m += format_numbers("Autokernel-Speedup: %.4f\n", row.speedup);
  m += format_numbers("Autokernel-Peak-Vram-Mb: %.1f\n", row.peak_vram_mb);
  m += "Autokernel-Llm-Tokens: " + std::to_string(row.llm_tokens) + "\n";
  m += format_numbers("Autokernel-Seconds: %.2f\n", row.seconds);
  if (row.correctness != "PASS") m += "Autokernel-Correctness: " + row.correctness + "\n";
  return m;
}

Result<ResultRow> row_from_commit(const CommitInfo& c) {
  const auto& t = c.trailers;
  std::string missing;
  auto text = [&](const char* key) -> std::string {
    auto it = t.find(key);
    if (it == t.end() && missing.empty()) missing = key;
    return it == t.end() ? "" : it->second;
  };
  auto integer = [&](const char* key) {
    auto v = parse_integer(text(key));
    if (!v && missing.empty()) missing = key;
    return v.value_or(0);
  };
  auto number = [&](const char* key) {
    auto v = parse_decimal(text(key), false);
    if (!v && missing.empty()) missing = key;
    return v.value_or(0);
  };
  ResultRow r;
  r.experiment = integer("Autokernel-Experiment");
  r.tag = text("Autokernel-Kernel");
  r.kernel_type = text("Autokernel-Type");
  r.latency_us = number("Autokernel-Latency-Us");
  r.throughput = number("Autokernel-Throughput");
  r.pct_peak = number("Autokernel-Pct-Peak");
  r.speedup = number("Autokernel-Speedup");
  r.peak_vram_mb = number("Autokernel-Peak-Vram-Mb");
  r.llm_tokens = integer("Autokernel-Llm-Tokens");
  r.seconds = number("Autokernel-Seconds");
  if (!missing.empty()) return error("commit " + c.id + " lacks autokernel's trailers (" + missing + " is missing or not a number)");
  r.correctness = t.count("Autokernel-Correctness") ? t.at("Autokernel-Correctness") : "PASS";
  r.kept = true;
  r.commit = c.id;
  r.move = MoveKind::Edit;   // commits of an older autokernel carry no move: its kept rows count alike
  if (auto m = t.find("Autokernel-Move"); m != t.end())
    r.move = m->second == "structure" ? MoveKind::Structure : m->second == "baseline" ? MoveKind::Baseline : MoveKind::Edit;
  std::string subject = c.message.substr(0, c.message.find('\n'));
  std::string prefix = "experiment " + std::to_string(r.experiment) + ": " + r.tag + ": ";
  r.description = subject.rfind(prefix, 0) == 0 ? subject.substr(prefix.size()) : subject;
  return r;
}

}  // namespace ak
