#include "daemon/verify/verify_report.hpp"

#include <algorithm>
#include <cstdio>

#include "common/format.hpp"

namespace ak {
namespace {

double num(const nlohmann::json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; }

std::string row(const std::string& label, const nlohmann::json& j) {
  char line[240];
  if (j.contains("error")) {
    std::snprintf(line, sizeof line, "%-34s failed: %s\n", label.c_str(), j.value("error", std::string()).c_str());
    return line;
  }
  std::snprintf(line, sizeof line, "%-34s %9.3f  %9.3f  %9.3f  %12.3g\n", label.c_str(), num(j, "median_ms"), num(j, "min_ms"),
                num(j, "max_ms"), num(j, "rel_l2"));
  return line;
}

std::string joined(const nlohmann::json& list) {
  std::string out;
  for (auto& t : list) out += (out.empty() ? "" : ", ") + (t.is_string() ? t.get<std::string>() : t.dump());
  return out.empty() ? "none" : out;
}

/// Why the GPU idles: the CPU time to issue a step against its kernels, and its waits for the GPU.
std::string host_side_text(const nlohmann::json& idle) {
  std::string out;
  for (const char* key : {"eager", "autokernel"}) {
    if (!idle.contains(key) || !idle[key].contains("host_us")) continue;
    const auto& p = idle[key];
    const double host = num(p, "host_us"), busy = num(p, "busy_us");
    out += std::string("  the CPU issues a step, ") + (std::string(key) == "eager" ? "eager" : "with the ops") +
           format_numbers(", in %.1f µs against %.1f µs of kernels: ", host, busy) +
           (host > busy ? "the GPU waits for the CPU" : "the CPU keeps ahead");
    const auto syncs = p.value("syncs", nlohmann::json::array());
    if (!syncs.empty()) out += format_numbers("; %.0f waits for the GPU in a step, the first: ", double(syncs.size())) + syncs[0].get<std::string>();
    out += "\n";
    if (p.contains("first_op_ms") && p.contains("idle_us"))
      out += format_numbers("    the first call of what the ops replace comes %.2f ms into the step (%.2f ms of the CPU's): "
                            "until then the model's own Python runs and the GPU has next to nothing queued; "
                            "at most %.1f µs of the idle time falls after it\n",
                            num(p, "first_op_ms"), num(p, "first_op_cpu_ms"),
                            std::max(num(p, "idle_us") - num(p, "first_op_ms") * 1000, 0.0));
  }
  return out;
}

}  // namespace

std::string timing_table(const nlohmann::json& report) {
  std::string out = std::string(34, ' ') + " median ms     min ms     max ms  rel. L2 vs fp32\n";
  out += row("eager PyTorch", report.value("eager", nlohmann::json::object()));
  out += row("with autokernel ops", report.value("autokernel", nlohmann::json::object()));
  if (report.contains("graph")) out += row("CUDA graph", report["graph"]);
  if (report.contains("autokernel_graph")) out += row("CUDA graph + ops", report["autokernel_graph"]);
  if (report.contains("capture")) out += row("capture() (causal SDPA)", report["capture"]);
  if (report.contains("autokernel_capture")) out += row("capture() + ops", report["autokernel_capture"]);
  const std::string best = report.contains("compile") ? report["compile"].value("mode", std::string()) : "";
  if (report.contains("compile_modes") && report["compile_modes"].is_object()) {
    for (auto& [mode, j] : report["compile_modes"].items())
      out += row("torch.compile " + mode + (mode == best ? " (best)" : ""), j);
  } else if (report.contains("compile")) {
    out += row("torch.compile", report["compile"]);
  }
  if (report.contains("autokernel_compile")) {
    const auto& j = report["autokernel_compile"];
    out += row("torch.compile + ops (" + joined(j.value("ops", nlohmann::json::array())) + ")", j);
  }
  if (report.contains("liger")) out += row("Liger-Kernel's patch", report["liger"]);
  return out;
}

std::string served_text(const nlohmann::json& report) {
  if (!report.contains("served") || !report["served"].contains("calls")) return "";
  std::string out = "calls served by an op (of a step's calls), per replaced function:\n";
  for (auto& c : report["served"]["calls"]) {
    const double calls = num(c, "calls"), served = num(c, "served");
    if (calls == 0) {
      out += format_numbers("      -   (%.0f calls) ", num(c, "not_its_form")) + c.value("name", std::string("?")) +
             ": not of the form the op computes (its first call told): its own forward, by design\n";
      continue;
    }
    out += format_numbers("  %5.1f%% ", calls > 0 ? 100 * served / calls : 0.0) +
           format_numbers("(%.0f of %.0f) ", served, calls) + c.value("name", std::string("?"));
    if (num(c, "declined") > 0) out += format_numbers("; %.0f declined in Python", num(c, "declined"));
    if (num(c, "op_fell_back") > 0) out += format_numbers("; %.0f ran PyTorch's op inside the op", num(c, "op_fell_back"));
    if (c.contains("files") && c["files"].is_object() && !c["files"].empty()) {
      std::string files;
      for (auto& [tag, n] : c["files"].items())
        files += (files.empty() ? "" : ", ") + tag + format_numbers(" %.0f", n.is_number() ? n.get<double>() : 0.0);
      out += "; by file: " + files;
    }
    out += "\n";
  }
  if (report["served"]["calls"].empty()) out += "  no replacement was called by the model\n";
  return out;
}

std::string op_cost_text(const nlohmann::json& report) {
  std::string out;
  if (report.contains("cpu_cost") && report["cpu_cost"].contains("calls")) {
    const auto& cost = report["cpu_cost"];
    out += format_numbers("CPU time of one call (goal: at most %.0f µs alone)", num(cost, "goal_us")) + "\n";
    for (auto& c : cost["calls"]) {
      char line[480];
      std::snprintf(line, sizeof line,
                    "  %s\n    CPU %6.2f µs alone, %6.2f in the model's steps (the original %6.2f, %6.2f); GPU %8.2f µs (the original %8.2f)\n",
                    c.value("name", std::string("?")).c_str(), num(c, "alone_us_per_call"), num(c, "us_per_call"),
                    num(c, "original_alone_us_per_call"), num(c, "original_us_per_call"), num(c, "gpu_us_per_call"),
                    num(c, "original_gpu_us_per_call"));
      out += line;
    }
    if (cost["calls"].empty()) out += "  no replacement was called by the model\n";
  }
  if (report.contains("gpu_idle")) {
    const auto& idle = report["gpu_idle"];
    auto part = [&](const char* key) {
      if (!idle.contains(key)) return std::string("-");
      if (idle[key].contains("error")) return "failed: " + idle[key].value("error", std::string());
      return format_numbers("busy %.1f µs, idle %.1f µs", num(idle[key], "busy_us"), num(idle[key], "idle_us"));
    };
    out += "GPU time per step: eager " + part("eager") + "; with the ops " + part("autokernel");
    if (idle.contains("added_us")) out += format_numbers("; the ops add %.1f µs of idle time", num(idle, "added_us"));
    out += "\n";
    out += host_side_text(idle);
    for (const char* key : {"eager", "autokernel"}) {
      if (!idle.contains(key) || !idle[key].contains("kernels")) continue;
      out += std::string("  the kernels of a step, ") + (std::string(key) == "eager" ? "eager" : "with the ops") + ":\n";
      for (auto& k : idle[key]["kernels"]) {
        char line[200];
        std::snprintf(line, sizeof line, "    %9.1f µs %5.1f calls  %.100s\n", num(k, "us"), num(k, "calls"),
                      k.value("name", std::string("?")).c_str());
        out += line;
      }
    }
  }
  return out;
}

std::string compile_decision_text(const nlohmann::json& report) {
  if (!report.contains("compile_decision")) return "";
  const auto& d = report["compile_decision"];
  std::string out = "compile decision (mode " + d.value("mode", std::string("?")) +
                    format_numbers("): compile alone %.3f ms", num(d, "baseline_ms"));
  if (d.contains("single_ms"))
    for (auto& [type, ms] : d["single_ms"].items()) out += "; " + type + format_numbers(" alone %.3f ms", ms.is_number() ? ms.get<double>() : 0.0);
  if (d.contains("together_ms") && d["together_ms"].is_number() && d.value("helped", nlohmann::json::array()).size() > 1)
    out += "; " + joined(d["helped"]) + format_numbers(" together %.3f ms", num(d, "together_ms"));
  out += "\n  under torch.compile the ops of: " + joined(d.value("enabled", nlohmann::json::array())) +
         format_numbers(" (a type is kept when the step is at least %.0f%% faster)", 100 * num(d, "min_gain")) + "\n";
  return out;
}

}  // namespace ak
