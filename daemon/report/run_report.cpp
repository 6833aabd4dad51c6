#include "daemon/report/run_report.hpp"

#include "common/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace ak {
namespace {

}  // namespace

Result<RunSnapshot> read_run(const std::string& dir) {
  RunSnapshot s;
  s.dir = dir;
  auto rows = read_results(dir + "/results.tsv");
  if (!rows) return rows.error();
  s.rows = std::move(*rows);
  std::ifstream in(dir + "/state.json");
  s.state = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json::object();
  if (s.state.is_discarded()) s.state = nlohmann::json::object();
  return s;
}

std::string status_text(const RunSnapshot& s) {
  const auto& st = s.state;
  std::string out = "run " + st.value("run", std::filesystem::path(s.dir).filename().string()) + " (" +
                    st.value("status", "unknown") + "): " + std::to_string(s.rows.size()) + " experiments, " +
                    format_numbers("%.2f h, ", st.value("seconds", 0.0) / 3600) + std::to_string(st.value("llm_tokens", 0LL)) +
                    format_numbers(" LLM tokens ($%.2f)\n", st.value("llm_cost_usd", 0.0));
  out += "kernel        baseline us    best us   speedup  pct_peak  experiments  converged\n";
  std::string against;
  if (st.contains("kernels"))
    for (auto& k : st["kernels"]) {
      against += (against.empty() ? "" : "; ") + k.value("tag", std::string("?")) + ": " + k.value("baseline", std::string("?"));
      char line[512];
      std::string conv = k.value("converged", "");
      std::snprintf(line, sizeof line, "%-12s %12.2f %10.2f %8.3fx %8.1f%% %12d  %s\n", k.value("tag", "?").c_str(),
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
    out += "last: experiment " + std::to_string(r.experiment) + " " + r.tag + ": " + r.description + ": " +
           r.correctness + format_numbers(" %.2f us", r.latency_us) + (r.kept ? ", kept" : ", reverted") + "\n";
  }
  // What each GPU is doing now (a run that has stopped shows them idle, or what was in flight).
  if (st.contains("gpus") && st["gpus"].is_array())
    for (auto& g : st["gpus"])
      out += "GPU " + std::to_string(g.value("device", 0)) + (g.value("model", "").empty() ? "" : " (" + g.value("model", "") + ")") +
             ": " + g.value("doing", "idle") + "\n";
  return out;
}

std::string markdown_report(const RunSnapshot& s, const std::string& svg_name) {
  std::string md = "# autokernel run " + s.state.value("run", std::string("?")) + "\n\n";
  md += "Status: " + s.state.value("status", std::string("unknown")) + ", " + std::to_string(s.rows.size()) +
        " experiments. Whole-program speedup (Amdahl, configured weights): " +
        format_numbers("%.3fx", s.state.value("amdahl_speedup", 1.0)) + ".\n\n";
  md += "| kernel | baseline µs | baseline is | best µs | speedup | pct_peak | experiments | converged |\n|---|---|---|---|---|---|---|---|\n";
  if (s.state.contains("kernels"))
    for (auto& k : s.state["kernels"])
      md += "| " + k.value("tag", std::string("?")) + " | " + format_numbers("%.2f", k.value("baseline_us", 0.0)) + " | " +
            k.value("baseline", std::string("?")) + " | " +
            format_numbers("%.2f", k.value("best_us", 0.0)) + " | " + format_numbers("%.3fx", k.value("speedup", 0.0)) + " | " +
            format_numbers("%.1f%%", k.value("pct_peak", 0.0) * 100) + " | " + std::to_string(k.value("experiments", 0)) + " | " +
            k.value("converged", std::string("no")) + " |\n";
  md += "\n![throughput over experiments](" + svg_name + ")\n\n## Kept steps\n\n";
  md += "| experiment | kernel | µs | throughput | speedup | commit | what |\n|---|---|---|---|---|---|---|\n";
  for (auto& r : s.rows)
    if (r.kept)
      md += "| " + std::to_string(r.experiment) + " | " + r.tag + " | " + format_numbers("%.2f", r.latency_us) + " | " +
            format_numbers("%.1f", r.throughput) + " | " + format_numbers("%.3fx", r.speedup) + " | " + r.commit + " | " + r.description + " |\n";
  std::map<std::string, int> verdicts;
  for (auto& r : s.rows) verdicts[r.correctness]++;
  md += "\n## Verdicts\n\n";
  for (auto& [v, n] : verdicts) md += "- " + v + ": " + std::to_string(n) + "\n";
  return md;
}

std::string combined_report(const std::vector<RunSnapshot>& runs) {
  std::string md = "# autokernel: " + std::to_string(runs.size()) + " runs of one program\n\n";
  std::string table = "| run | status | kernel | best µs | speedup | weight | experiments |\n|---|---|---|---|---|---|---|\n";
  double rest = 1.0, now = 0, weights = 0;
  long long experiments = 0;
  for (auto& r : runs) {
    const std::string name = r.state.value("run", std::filesystem::path(r.dir).filename().string());
    experiments += (long long)r.rows.size();
    if (!r.state.contains("kernels")) continue;
    for (auto& k : r.state["kernels"]) {
      const double w = k.value("weight", 0.0), sp = k.value("speedup", 0.0);
      rest -= w;
      weights += w;
      now += w / (sp > 0 ? sp : 1.0);
      table += "| " + name + " | " + r.state.value("status", std::string("unknown")) + " | " + k.value("tag", std::string("?")) +
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

std::string progress_svg(const std::vector<ResultRow>& rows) {
  const double W = 800, H = 400, L = 70, R = 130, T = 20, B = 50;
  double max_x = 1, max_y = 1;
  for (auto& r : rows) {
    max_x = std::max(max_x, double(r.experiment));
    if (r.correctness == "PASS") max_y = std::max(max_y, r.throughput);
  }
  max_y *= 1.1;
  auto X = [&](double x) { return L + (W - L - R) * x / max_x; };
  auto Y = [&](double y) { return H - B - (H - T - B) * y / max_y; };
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};
  std::map<std::string, int> color_of;
  for (auto& r : rows) color_of.emplace(r.tag, int(color_of.size()) % 9);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"800\" height=\"400\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"800\" height=\"400\" fill=\"white\"/>\n";
  svg += "<line x1=\"" + format_numbers("%.1f", L) + "\" y1=\"" + format_numbers("%.1f", H - B) + "\" x2=\"" + format_numbers("%.1f", W - R) + "\" y2=\"" + format_numbers("%.1f", H - B) + "\" stroke=\"black\"/>\n";
  svg += "<line x1=\"" + format_numbers("%.1f", L) + "\" y1=\"" + format_numbers("%.1f", T) + "\" x2=\"" + format_numbers("%.1f", L) + "\" y2=\"" + format_numbers("%.1f", H - B) + "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i)
    svg += "<text x=\"" + format_numbers("%.1f", L - 6) + "\" y=\"" + format_numbers("%.1f", Y(max_y * i / 4) + 4) + "\" text-anchor=\"end\">" +
           format_numbers("%.0f", max_y * i / 4) + "</text>\n";
  const int step = std::max(1, int(std::ceil(max_x / 10)));
  for (int x = step; x <= int(max_x); x += step)
    svg += "<text x=\"" + format_numbers("%.1f", X(x)) + "\" y=\"" + format_numbers("%.1f", H - B + 16) + "\" text-anchor=\"middle\">" +
           std::to_string(x) + "</text>\n";
  svg += "<text x=\"" + format_numbers("%.1f", (W - R + L) / 2) + "\" y=\"" + format_numbers("%.1f", H - 12) + "\" text-anchor=\"middle\">experiment</text>\n";
  svg += "<text x=\"16\" y=\"" + format_numbers("%.1f", (H - B + T) / 2) + "\" transform=\"rotate(-90 16 " + format_numbers("%.1f", (H - B + T) / 2) +
         ")\" text-anchor=\"middle\">throughput (GB/s or TFLOPS)</text>\n";
  int legend = 0;
  for (auto& [tag, c] : color_of) {
    std::string pts;
    for (auto& r : rows)
      if (r.tag == tag && r.correctness == "PASS") pts += format_numbers("%.1f,%.1f ", X(r.experiment), Y(r.throughput));
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(colors[c]) + "\" stroke-opacity=\"0.35\" points=\"" + pts + "\"/>\n";
    // The best so far: a step line through the kept experiments, out to the last one.
    std::string best;
    double level = -1, last_x = 0;
    for (auto& r : rows) {
      if (r.tag != tag) continue;
      last_x = r.experiment;
      if (!r.kept) continue;
      if (level >= 0) best += format_numbers("%.1f,%.1f ", X(r.experiment), Y(level));
      level = r.throughput;
      best += format_numbers("%.1f,%.1f ", X(r.experiment), Y(level));
    }
    if (level >= 0) best += format_numbers("%.1f,%.1f", X(last_x), Y(level));
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(colors[c]) + "\" stroke-width=\"2\" points=\"" + best + "\"/>\n";
    for (auto& r : rows)
      if (r.tag == tag && r.correctness == "PASS")
        svg += "<circle cx=\"" + format_numbers("%.1f", X(r.experiment)) + "\" cy=\"" + format_numbers("%.1f", Y(r.throughput)) + "\" r=\"" +
               (r.kept ? "5" : "2.5") + "\" fill=\"" + (r.kept ? std::string(colors[c]) : "white") + "\" stroke=\"" +
               colors[c] + "\"><title>" + std::to_string(r.experiment) + ": " + r.description + "</title></circle>\n";
    svg += "<text x=\"" + format_numbers("%.1f", W - R + 12) + "\" y=\"" + format_numbers("%.1f", T + 16 + 18 * legend++) + "\" fill=\"" +
           colors[c] + "\">" + tag + "</text>\n";
  }
  svg += "<text x=\"" + format_numbers("%.1f", W - R + 12) + "\" y=\"" + format_numbers("%.1f", T + 16 + 18 * legend + 10) +
         "\" fill=\"#444\">filled: kept</text>\n<text x=\"" + format_numbers("%.1f", W - R + 12) + "\" y=\"" + format_numbers("%.1f", T + 16 + 18 * legend + 28) + "\" fill=\"#444\">line: best so far</text>\n</svg>\n";
  return svg;
}

}  // namespace ak
