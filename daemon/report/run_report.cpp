#include "daemon/report/run_report.hpp"

#include "common/format.hpp"
#include "common/text_escape.hpp"
#include "daemon/proposers/bottleneck.hpp"
#include "daemon/report/kernelbench_scores.hpp"
#include "daemon/run_folder/gpu_states.hpp"
#include "daemon/run_folder/state_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

namespace ak {
namespace {

/// A string field of state.json, whatever type a damaged or hand-edited file gives it.
std::string field(const nlohmann::json& j, const char* key, const std::string& otherwise) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : otherwise;
}

std::string count_of(int n, size_t total) {
  return std::to_string(n) + "/" + std::to_string(total) + format_numbers(" (%.0f%%)", total ? 100.0 * n / double(total) : 0);
}

std::string micros(double us) { return us > 0 ? format_numbers("%.2f", us) : "—"; }
std::string times(double x) { return x > 0 ? format_numbers("%.3fx", x) : "—"; }

/// The run's user types as KernelBench scores them (docs/user-types.md); empty without user types.
std::string kernelbench_section(const KernelBenchScores& s, const std::string& refusals_file) {
  if (s.problems.empty() && s.refused.empty()) return "";
  std::string md = "\n## KernelBench\n\nEach kernel of a user type is a problem: correct under our tolerance (a passing best "
                   "stands) and under KernelBench's (its checker's atol = rtol for the dtype: fp32 1e-4, fp16 and bf16 "
                   "1e-2); its best against PyTorch eager and torch.compile.";
  if (s.builtin)
    md += " A problem that computes a built-in type runs as that type (its tag, then ‡ and the problem's file): its "
          "correctness is the type's verdict, whose tolerance is no looser than KernelBench's at fp32 (so KernelBench's "
          "column follows from ours), and its PyTorch times are its module's, from `kernelbench --baselines`.";
  md += "\n\n| problem | correct (ours) | correct (KernelBench) | best µs | PyTorch eager µs | torch.compile µs | vs eager | vs compile |\n"
        "|---|---|---|---|---|---|---|---|\n";
  bool only_kernelbench = false;
  for (const ProblemScore& p : s.problems) {
    // A problem correct only under KernelBench's tolerance is timed by its fastest such verdict.
    const bool theirs = !p.correct && p.kernelbench_us > 0;
    only_kernelbench |= theirs;
    const double us = theirs ? p.kernelbench_us : p.best_us;
    const std::string name = p.builtin_problem.empty()
                                 ? p.tag
                                 : p.tag + " ‡ " + std::filesystem::path(p.builtin_problem).filename().string();
    md += "| " + markdown_cell(name) + " | " + (p.correct ? "yes" : "no") + " | " + (p.kernelbench_correct ? "yes" : "no") + " | " +
          micros(us) + (theirs ? " †" : "") + " | " + micros(p.eager_us) + " | " + micros(p.compile_us) + " | " +
          times(theirs ? p.kernelbench_speedup_eager() : p.speedup_eager()) + " | " +
          times(theirs ? p.kernelbench_speedup_compile() : p.speedup_compile()) + " |\n";
  }
  for (const RefusedProblem& r : s.refused)
    md += "| " + markdown_cell(std::filesystem::path(r.file).filename().string()) + " (refused: " + markdown_cell(r.reason) +
          ") | no | no | — | — | — | — | — |\n";
  if (only_kernelbench) md += "\n† no file passes our tolerance: the fastest within KernelBench's.\n";
  if (!s.refused.empty()) {
    // `kernelbench --offline` writes the problems it left out for needing an LLM with the refusals.
    const auto llm = std::count_if(s.refused.begin(), s.refused.end(),
                                   [](const RefusedProblem& r) { return r.reason.rfind("needs an LLM", 0) == 0; });
    md += "\n" + std::to_string(s.refused.size()) + " problem" + (s.refused.size() == 1 ? "" : "s") + " refused by `kernelbench` (" +
          markdown_cell(refusals_file) + ")" +
          (llm ? ", " + std::to_string(llm) + " of them left out as needing an LLM (`--offline`)," : "") +
          " count below as not correct.\n";
  }
  md += "\nfast_p: the share of the problems given to `kernelbench` that are correct and more than p times faster than the "
        "baseline; at p = 0, correct alone.\n\n"
        "| p | vs eager (ours) | vs eager (KernelBench) | vs torch.compile (ours) | vs torch.compile (KernelBench) |\n|---|---|---|---|---|\n";
  const size_t n = s.total();
  for (const FastP& f : s.fast_p)
    md += format_numbers("| %g | ", f.p) + count_of(f.eager, n) + " | " + count_of(f.kernelbench_eager, n) + " | " +
          count_of(f.compile, n) + " | " + count_of(f.kernelbench_compile, n) + " |\n";
  md += "\n";
  const std::string of_n = " of the " + std::to_string(n) + " problems";
  if (s.without_eager) md += std::to_string(s.without_eager) + of_n + " have no PyTorch eager time: they count as not fast against it.\n";
  if (s.without_compile)
    md += std::to_string(s.without_compile) + of_n + " have no torch.compile time (not measured; the verdict's notes say why): "
          "they count as not fast against it.\n";
  if (!s.unreadable.empty()) {
    md += "\nVerdict files that could not be read (scored as if those experiments had no verdict):\n\n";
    for (const std::string& f : s.unreadable) md += "- " + markdown_cell(f) + "\n";
  }
  return md;
}

}  // namespace

Result<RunSnapshot> read_run(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found || ec || !fs::is_directory(st))
    return error(dir + ": " + (st.type() == fs::file_type::not_found ? "no such folder" : ec ? "cannot read: " + ec.message() : "not a folder") +
                 " (give the run folder, workdir/name of the config)");
  RunSnapshot s;
  s.dir = dir;
  auto table = read_results_table(dir + "/results.tsv");
  if (!table) return table.error();
  s.rows = std::move(table->rows);
  s.damaged = std::move(table->damaged);
  auto state = read_state_file(dir + "/state.json");
  if (!state) return state.error();
  s.state = std::move(*state);
  // The refusals of the `kernelbench` call that wrote the run's config, where it left them.
  if (std::error_code ec; fs::exists(default_refusals_path(dir), ec)) {
    auto refused = read_kernelbench_refusals(default_refusals_path(dir));
    if (!refused) return refused.error();
    s.kernelbench_refused = std::move(*refused);
    s.refusals_file = default_refusals_path(dir);
  }
  if (std::error_code ec; fs::exists(default_builtin_problems_path(dir), ec)) {
    auto builtin = read_builtin_problems(default_builtin_problems_path(dir));
    if (!builtin) return builtin.error();
    s.builtin_problems = std::move(*builtin);
  }
  if (std::error_code ec; fs::exists(default_problem_baselines_path(dir), ec)) {
    auto baselines = read_problem_baselines(default_problem_baselines_path(dir));
    if (!baselines) return baselines.error();
    s.problem_baselines = std::move(*baselines);
  }
  s.counters = read_counters_table(counters_table_path(dir));
  return s;
}

namespace {

/// One line per damaged results row: where it is, why, and what becomes of it.
std::string damaged_lines(const RunSnapshot& s) {
  std::string out;
  for (const DamagedRow& d : s.damaged)
    out += "results.tsv line " + std::to_string(d.line) + " is not a row (" + terminal_safe(d.why) +
           "): left out; the daemon's next start moves it to " + terminal_safe(damaged_rows_path(s.dir + "/results.tsv")) + "\n";
  return out;
}

/// The counters row of experiment `n` of `tag`, or null: the last, of the verdict that decided
/// (a candidate judged again beside a newer best, or with more launches, has a row per look).
const CountersRow* counters_of(const std::vector<CountersRow>& counters, long long n, const std::string& tag) {
  for (auto it = counters.rbegin(); it != counters.rend(); ++it)
    if (it->experiment == n && it->tag == tag) return &*it;
  return nullptr;
}

std::string pct_cell(const std::optional<double>& x) { return x ? format_numbers("%.0f%%", *x) : "—"; }

/// The kept versions' counters side by side: what limited each step of the lineage.
std::string counters_section(const RunSnapshot& s) {
  std::string table;
  for (auto& r : s.rows) {
    if (!r.kept) continue;
    const CountersRow* c = counters_of(s.counters, r.experiment, r.tag);
    if (!c) continue;
    const HardwareCounters& h = c->counters;
    if (!h.available()) {
      table += "| " + std::to_string(r.experiment) + " | " + markdown_cell(r.tag) + " | " + format_numbers("%.2f", r.latency_us) +
               " | no counters: " + markdown_cell(h.unavailable) + " | | | | | | | | |\n";
      continue;
    }
    const std::string occupancy = pct_cell(h.achieved_occupancy_pct) +
                                  (h.occupancy ? " of " + format_numbers("%.0f%%", h.occupancy->theoretical_pct) + " (" +
                                                     markdown_cell(h.occupancy->limiter) + ")"
                                               : "");
    const std::string stall = h.stalls.empty() ? "—"
                                               : format_numbers("%.0f%% ", h.stalls[0].share * 100) +
                                                     markdown_cell(stall_words(h.stalls[0].reason));
    table += "| " + std::to_string(r.experiment) + " | " + markdown_cell(r.tag) + " | " + format_numbers("%.2f", r.latency_us) +
             " | " + markdown_cell(diagnose(h, c->registers, c->spill_bytes).sentence()) + " | " + pct_cell(h.dram_pct) + " | " +
             pct_cell(h.sm_pct) + " | " + pct_cell(h.tensor_pct) + " | " + occupancy + " | " + pct_cell(h.l2_hit_pct) + " | " +
             (h.bank_conflict_ratio ? format_numbers("%.0f%%", *h.bank_conflict_ratio * 100) : "—") + " | " + stall + " | " +
             std::to_string(c->registers) + " / " + std::to_string(c->spill_bytes) + " |\n";
  }
  if (table.empty()) return "";
  return "\n## What limited each kept version\n\nThe GPU's counters in one more launch of each kept file at its timed shape "
         "(counters.tsv has every judged experiment's).\n\n"
         "| experiment | kernel | µs | what limits it | DRAM | SM | tensor pipe | occupancy (limiter) | L2 hits | "
         "bank-conflict replays | top warp state | registers / spilled |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n" +
         table;
}

}  // namespace

std::string status_text(const RunSnapshot& s) {
  const auto& st = s.state;
  // Every text here may quote an LLM: shown with its control characters escaped (terminal_safe).
  std::string out = "run " + terminal_safe(field(st, "run", std::filesystem::path(s.dir).filename().string())) + " (" +
                    terminal_safe(field(st, "status", "unknown")) + "): " + std::to_string(s.rows.size()) + " experiments, " +
                    format_numbers("%.2f h, ", st.value("seconds", 0.0) / 3600) + std::to_string(st.value("llm_tokens", 0LL)) +
                    format_numbers(" LLM tokens ($%.2f)\n", st.value("llm_cost_usd", 0.0));
  out += "kernel        baseline us    best us   speedup  pct_peak  experiments  converged\n";
  std::string against;
  if (st.contains("kernels"))
    for (auto& k : st["kernels"]) {
      against += (against.empty() ? "" : "; ") + terminal_safe(field(k, "tag", "?")) + ": " + terminal_safe(field(k, "baseline", "?"));
      char line[512];
      std::string conv = terminal_safe(field(k, "converged", ""));
      std::snprintf(line, sizeof line, "%-12s %12.2f %10.2f %8.3fx %8.1f%% %12d  %s\n", terminal_safe(field(k, "tag", "?")).c_str(),
                    k.value("baseline_us", 0.0), k.value("best_us", 0.0), k.value("speedup", 0.0),
                    k.value("pct_peak", 0.0) * 100, k.value("experiments", 0),
                    conv.empty() ? ("no (" + std::to_string(k.value("consecutive_reverts", 0)) + " reverts in a row)").c_str()
                                 : conv.c_str());
      out += line;
    }
  if (!against.empty()) out += "speedups are against: " + against + "\n";
  out += format_numbers("whole program (Amdahl, weights as configured): %.3fx\n", st.value("amdahl_speedup", 1.0));
  if (!s.rows.empty()) {
    const ResultRow& r = s.rows.back();
    out += "last: experiment " + std::to_string(r.experiment) + " " + terminal_safe(r.tag) + ": " + terminal_safe(r.description) + ": " +
           terminal_safe(r.correctness) + (r.failure.empty() ? "" : " (" + terminal_safe(r.failure) + ")") + format_numbers(" %.2f us", r.latency_us) + (r.kept ? ", kept" : ", reverted") + "\n";
  }
  // What each GPU is doing now (a run that has stopped shows them idle, or what was in flight).
  if (st.contains("gpus") && st["gpus"].is_array())
    for (auto& g : st["gpus"]) {
      const std::string time = g.contains("seconds") ? gpu_time_line(g["seconds"]) : "";
      out += "GPU " + std::to_string(g.value("device", 0)) + (field(g, "model", "").empty() ? "" : " (" + terminal_safe(field(g, "model", "")) + ")") +
             ": " + terminal_safe(field(g, "doing", "idle")) + (time.empty() ? "" : " (since the daemon started: " + time + ")") + "\n";
    }
  return out + damaged_lines(s);
}

std::string markdown_report(const RunSnapshot& s, const std::string& svg_name) {
  // Every cell is text (markdown_cell): a description can add no link, image, HTML or column.
  std::string md = "# autokernel run " + markdown_cell(field(s.state, "run", "?")) + "\n\n";
  md += "Status: " + markdown_cell(field(s.state, "status", "unknown")) + ", " + std::to_string(s.rows.size()) +
        " experiments. Whole-program speedup (Amdahl, configured weights): " +
        format_numbers("%.3fx", s.state.value("amdahl_speedup", 1.0)) + ".\n\n";
  md += "| kernel | baseline µs | baseline is | best µs | speedup | pct_peak | experiments | converged |\n|---|---|---|---|---|---|---|---|\n";
  if (s.state.contains("kernels"))
    for (auto& k : s.state["kernels"])
      md += "| " + markdown_cell(field(k, "tag", "?")) + " | " + format_numbers("%.2f", k.value("baseline_us", 0.0)) + " | " +
            markdown_cell(field(k, "baseline", "?")) + " | " +
            format_numbers("%.2f", k.value("best_us", 0.0)) + " | " + format_numbers("%.3fx", k.value("speedup", 0.0)) + " | " +
            format_numbers("%.1f%%", k.value("pct_peak", 0.0) * 100) + " | " + std::to_string(k.value("experiments", 0)) + " | " +
            markdown_cell(field(k, "converged", "no")) + " |\n";
  md += "\n![% of the measured peak over experiments](" + svg_name + ")\n\n## Kept steps\n\n";
  md += "| experiment | kernel | µs | throughput | speedup | commit | what |\n|---|---|---|---|---|---|---|\n";
  for (auto& r : s.rows)
    if (r.kept)
      md += "| " + std::to_string(r.experiment) + " | " + markdown_cell(r.tag) + " | " + format_numbers("%.2f", r.latency_us) + " | " +
            format_numbers("%.1f", r.throughput) + " | " + format_numbers("%.3fx", r.speedup) + " | " + markdown_cell(r.commit) + " | " +
            markdown_cell(r.description) + " |\n";
  md += counters_section(s);
  std::map<std::string, int> verdicts;
  for (auto& r : s.rows) verdicts[r.correctness]++;
  md += "\n## Verdicts\n\n";
  for (auto& [v, n] : verdicts) md += "- " + markdown_cell(v) + ": " + std::to_string(n) + "\n";
  if (!s.damaged.empty()) {
    md += "\n## Damaged rows of results.tsv (left out above)\n\n";
    for (const DamagedRow& d : s.damaged) md += "- line " + std::to_string(d.line) + ": " + markdown_cell(d.why) + "\n";
  }
  return md + kernelbench_section(kernelbench_scores(s.rows, read_user_type_verdicts(s.dir, s.rows), s.kernelbench_refused,
                                                     s.builtin_problems, s.problem_baselines),
                                  s.refusals_file);
}

std::string combined_report(const std::vector<RunSnapshot>& runs) {
  std::string md = "# autokernel: " + std::to_string(runs.size()) + " runs of one program\n\n";
  std::string table = "| run | status | kernel | best µs | speedup | weight | experiments |\n|---|---|---|---|---|---|---|\n";
  double rest = 1.0, now = 0, weights = 0;
  long long experiments = 0;
  for (auto& r : runs) {
    const std::string name = field(r.state, "run", std::filesystem::path(r.dir).filename().string());
    experiments += (long long)r.rows.size();
    if (!r.state.contains("kernels")) continue;
    for (auto& k : r.state["kernels"]) {
      const double w = k.value("weight", 0.0), sp = k.value("speedup", 0.0);
      rest -= w;
      weights += w;
      now += w / (sp > 0 ? sp : 1.0);
      table += "| " + markdown_cell(name) + " | " + markdown_cell(field(r.state, "status", "unknown")) + " | " + markdown_cell(field(k, "tag", "?")) +
               " | " + format_numbers("%.2f", k.value("best_us", 0.0)) + " | " + format_numbers("%.3fx", sp) + " | " +
               format_numbers("%.3f", w) + " | " + std::to_string(k.value("experiments", 0)) + " |\n";
    }
  }
  md += format_numbers("Whole program (Amdahl over every run's kernels and weights): %.3fx", 1.0 / (std::max(rest, 0.0) + now)) +
        ", " + std::to_string(experiments) + " experiments in all.";
  if (weights > 1.0 + 1e-9)
    md += format_numbers(" The weights add up to %.3f, more than the whole program: do the runs list a kernel twice?", weights);
  md += "\n\n" + table;
  for (auto& r : runs) md += "\n---\n\n" + markdown_report(r, std::filesystem::path(r.dir).filename().string() + "-progress.svg");
  return md;
}

namespace {

std::string num1(double v) { return format_numbers("%.1f", v); }

/// An SVG element's attribute list from name/value pairs, each value escaped.
std::string attrs(std::initializer_list<std::pair<const char*, std::string>> list) {
  std::string a;
  for (auto& [name, value] : list) a += std::string(" ") + name + "=\"" + xml_escape(value) + "\"";
  return a;
}

std::string svg_text(double x, double y, const std::string& text, const std::string& extra = "") {
  return "<text" + attrs({{"x", num1(x)}, {"y", num1(y)}}) + extra + ">" + xml_escape(text) + "</text>\n";
}

}  // namespace

namespace {

/// A kept point's label on the chart: the bottleneck in a word and the reading behind it.
std::string chart_label(const HardwareCounters& h, int registers, int spills) {
  const Bottleneck b = diagnose(h, registers, spills);
  switch (b.limit) {
    case Limit::Memory: return "memory " + pct_cell(h.dram_pct);
    case Limit::MemoryLatency: return "latency " + pct_cell(h.dram_pct);
    case Limit::Compute: return "SM " + pct_cell(h.sm_pct);
    case Limit::TensorPipe: return "tensor " + pct_cell(h.tensor_pct);
    case Limit::Barrier: return "barriers";
    case Limit::SharedConflicts: return "bank conflicts";
    case Limit::Registers: return "registers";
    case Limit::Unknown: break;
  }
  return "";
}

}  // namespace

std::string progress_svg(const std::vector<ResultRow>& rows, const std::vector<CountersRow>& counters) {
  // One scale for every kernel: % of the peak measured on the GPU (bandwidth for the memory-bound
  // types, tensor throughput for the GEMMs), so GB/s and TFLOPS lines share an axis.
  const double W = 900, H = 460, L = 60, R = 190, T = 30, B = 50;
  double max_x = 1, top = 100;
  for (auto& r : rows) {
    max_x = std::max(max_x, double(r.experiment));
    if (r.correctness == "PASS") top = std::max(top, std::ceil(r.pct_peak * 100 / 20) * 20);
  }
  auto X = [&](double x) { return L + (W - L - R) * x / max_x; };
  auto Y = [&](double pct) { return H - B - (H - T - B) * pct / top; };
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};
  std::map<std::string, int> color_of;
  std::map<std::string, std::string> type_of;
  for (auto& r : rows) color_of.emplace(r.tag, int(color_of.size()) % 9), type_of.emplace(r.tag, r.kernel_type);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"" +
                    attrs({{"width", num1(W)}, {"height", num1(H)}, {"font-family", "sans-serif"}, {"font-size", "12"}}) + ">\n";
  svg += "<title>progress: % of the measured peak per kernel over experiments</title>\n";
  svg += "<rect" + attrs({{"width", num1(W)}, {"height", num1(H)}, {"fill", "white"}}) + "/>\n";
  for (double pct = 0; pct <= top + 1e-9; pct += 20) {
    svg += "<line" + attrs({{"x1", num1(L)}, {"y1", num1(Y(pct))}, {"x2", num1(W - R)}, {"y2", num1(Y(pct))},
                            {"stroke", pct == 100 ? "#888" : "#e4e4e4"}}) + (pct == 100 ? " stroke-dasharray=\"4 3\"" : "") + "/>\n";
    svg += svg_text(L - 6, Y(pct) + 4, format_numbers("%.0f%%", pct), " text-anchor=\"end\"");
  }
  svg += "<line" + attrs({{"x1", num1(L)}, {"y1", num1(H - B)}, {"x2", num1(W - R)}, {"y2", num1(H - B)}, {"stroke", "black"}}) + "/>\n";
  svg += "<line" + attrs({{"x1", num1(L)}, {"y1", num1(T)}, {"x2", num1(L)}, {"y2", num1(H - B)}, {"stroke", "black"}}) + "/>\n";
  const int step = std::max(1, int(std::ceil(max_x / 10)));
  for (int x = step; x <= int(max_x); x += step) svg += svg_text(X(x), H - B + 16, std::to_string(x), " text-anchor=\"middle\"");
  svg += svg_text((W - R + L) / 2, H - 12, "experiment", " text-anchor=\"middle\"");
  svg += svg_text(16, (H - B + T) / 2, "% of the measured peak (bandwidth or tensor throughput)",
                  " text-anchor=\"middle\" transform=\"rotate(-90 16 " + num1((H - B + T) / 2) + ")\"");
  int legend = 0;
  for (auto& [tag, c] : color_of) {
    const std::string color = colors[c];
    std::string pts, best;
    double level = -1, last_x = 0;
    for (auto& r : rows) {
      if (r.tag != tag) continue;
      if (r.correctness == "PASS") pts += num1(X(r.experiment)) + "," + num1(Y(r.pct_peak * 100)) + " ";
      // The best so far: a step line through the kept experiments, out to the last one.
      last_x = r.experiment;
      if (!r.kept) continue;
      if (level >= 0) best += num1(X(r.experiment)) + "," + num1(Y(level)) + " ";
      level = r.pct_peak * 100;
      best += num1(X(r.experiment)) + "," + num1(Y(level)) + " ";
    }
    if (level >= 0) best += num1(X(last_x)) + "," + num1(Y(level));
    svg += "<polyline" + attrs({{"fill", "none"}, {"stroke", color}, {"stroke-opacity", "0.35"}, {"points", pts}}) + "/>\n";
    svg += "<polyline" + attrs({{"fill", "none"}, {"stroke", color}, {"stroke-width", "2"}, {"points", best}}) + "/>\n";
    for (auto& r : rows) {
      if (r.tag != tag || r.correctness != "PASS") continue;
      const CountersRow* c = r.kept ? counters_of(counters, r.experiment, r.tag) : nullptr;
      const bool read = c && c->counters.available();
      std::string readings;
      if (read)
        for (auto& line : counter_lines(c->counters)) readings += "\n" + line;
      svg += "<circle" + attrs({{"cx", num1(X(r.experiment))}, {"cy", num1(Y(r.pct_peak * 100))}, {"r", r.kept ? "5" : "2.5"},
                                {"fill", r.kept ? color : "white"}, {"stroke", color}}) +
             "><title>" + xml_escape(std::to_string(r.experiment) + " " + r.tag + format_numbers(": %.1f%% of peak, %.2f us, ", r.pct_peak * 100, r.latency_us) +
                                     (r.kept ? "kept: " : "reverted: ") + r.description + readings) +
             "</title></circle>\n";
      if (read)
        if (std::string label = chart_label(c->counters, c->registers, c->spill_bytes); !label.empty())
          svg += svg_text(X(r.experiment) + 7, Y(r.pct_peak * 100) - 7, label, " font-size=\"9\" fill=\"" + color + "\"");
    }
    const double ly = T + 16 + 18 * legend++;
    svg += "<line" + attrs({{"x1", num1(W - R + 12)}, {"y1", num1(ly - 4)}, {"x2", num1(W - R + 30)}, {"y2", num1(ly - 4)},
                            {"stroke", color}, {"stroke-width", "2"}}) + "/>\n";
    svg += svg_text(W - R + 36, ly, tag == type_of[tag] ? tag : tag + " (" + type_of[tag] + ")", " fill=\"" + color + "\"");
  }
  const double ly = T + 16 + 18 * legend + 10;
  svg += svg_text(W - R + 12, ly, "filled: kept", " fill=\"#444\"") + svg_text(W - R + 12, ly + 18, "thick line: best so far", " fill=\"#444\"") +
         svg_text(W - R + 12, ly + 36, "dashed: 100% of peak", " fill=\"#444\"") + "</svg>\n";
  return svg;
}

}  // namespace ak
