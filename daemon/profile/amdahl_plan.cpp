#include "daemon/profile/amdahl_plan.hpp"

#include "common/format.hpp"
#include "common/text_escape.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "kernels_cuda/registry.hpp"

namespace ak {
namespace {

using Dims = std::vector<long long>;

/// [rows, cols] over the last dimension of the first tensor.
Dims rowwise_shape(const std::vector<Dims>& shapes) {
  if (shapes.empty() || shapes[0].empty()) return {};
  long long rows = 1;
  for (size_t i = 0; i + 1 < shapes[0].size(); ++i) rows *= shapes[0][i];
  return {rows, shapes[0].back()};
}

/// [M, N, K, has_bias] (matmul's contract version 2) from the operands of aten::mm / addmm /
/// bmm-free matmul ([M, K], [K, N]) or of aten::linear ([..., K] input, [N, K] weight); has_bias
/// when a one-dimensional operand of N values is among them (addmm's or linear's bias).
Dims matmul_shape(const std::vector<Dims>& shapes) {
  auto with_bias = [&](Dims gemm) {
    bool bias = false;
    for (const Dims& s : shapes) bias = bias || (s.size() == 1 && s[0] == gemm[1]);
    gemm.push_back(bias ? 1 : 0);
    return gemm;
  };
  for (size_t i = 0; i + 1 < shapes.size(); ++i) {
    const Dims &a = shapes[i], &b = shapes[i + 1];
    if (a.size() < 2 || b.size() != 2) continue;
    long long m = 1;
    for (size_t d = 0; d + 1 < a.size(); ++d) m *= a[d];
    if (a.size() == 2 && a[1] == b[0]) return with_bias({m, b[1], a[1]});
    if (a.back() == b[1]) return with_bias({m, b[0], b[1]});
  }
  return {};
}

/// One [[kernel]] entry of the plan's config for a Linear GEMM shape: the GEMM kernels' time there.
struct PlannedGemm {
  LinearGemm gemm;
  double weight = 0;   ///< share of the GPU time
};

/// The Linear GEMM shapes of the plan's matmul rows, each once (a shape whose GEMM runs as several
/// kernels, split-K and its reduction, adds their times), keyed by shape and dtype, and for each
/// the index of the first row that holds it.
std::map<std::pair<Dims, std::string>, std::pair<size_t, PlannedGemm>> planned_gemms(const Plan& plan) {
  std::map<std::pair<Dims, std::string>, std::pair<size_t, PlannedGemm>> out;
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const PlanRow& r = plan.rows[i];
    if (!r.supported || r.kernel.type != "matmul") continue;
    for (const LinearGemm& lg : r.kernel.linear_gemms) {
      auto [it, fresh] = out.try_emplace({lg.shape, lg.dtype}, i, PlannedGemm{lg, 0});
      PlannedGemm& g = it->second.second;
      if (!fresh) {
        g.gemm.total_us += lg.total_us;
        g.gemm.calls = std::max(g.gemm.calls, lg.calls);   // the launches of one call's kernels
      }
      if (r.kernel.total_us > 0) g.weight += r.f * lg.total_us / r.kernel.total_us;
    }
  }
  return out;
}

/// flash_attention's shape in its newest contract's terms (B, Hq, Hkv, S, D, mask, layout) from
/// SDPA's operands q [B, Hq, S, D] and k [B, Hkv, S, D]. The range says neither the mask nor the
/// strides: a decoder's causal mask and its projections' views are what the plan proposes.
Dims attention_shape(const std::vector<Dims>& shapes) {
  if (shapes.empty() || shapes[0].size() != 4) return {};
  const Dims& q = shapes[0];
  const long long kv_heads = shapes.size() > 1 && shapes[1].size() == 4 ? shapes[1][1] : q[1];
  return {q[0], q[1], kv_heads, q[2], q[3], 1, 2};   // mask 1: causal; layout 2: the projections' views
}

/// A shape in the terms of the type's spec, from the tensors of its NVTX range; empty when the
/// range does not say (fused_mlp is several ops, never one range).
Dims planned_shape(const std::string& type, const std::string& nvtx) {
  const auto shapes = nvtx_shapes(nvtx);
  if (type == "matmul") return matmul_shape(shapes);
  if (type == "flash_attention") return attention_shape(shapes);
  if (type == "fused_mlp") return {};
  return rowwise_shape(shapes);
}

std::string dims_text(const Dims& d, const char* sep) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? sep : "") + std::to_string(d[i]);
  return s;
}

/// "ROWS, COLS": what to fill in, in the spec's own names.
std::string shape_placeholder(const std::string& type) {
  const KernelSpec* spec = find_spec(type);
  std::string s;
  for (auto& n : spec->shape_names) {
    std::string up = n;
    for (char& c : up) c = char(std::toupper((unsigned char)c));
    s += (s.empty() ? "" : ", ") + up;
  }
  return s;
}

}  // namespace

double amdahl(double f, double s) { return 1.0 / ((1.0 - f) + f / s); }

StepPrediction plan_whole_step(const Profile& p, const std::vector<PlanRow>& rows) {
  std::vector<PredictedPart> gpu;
  std::vector<CpuPart> cpu;
  for (auto& r : rows) {
    if (!r.supported || r.f <= 0) continue;
    gpu.push_back({r.kernel.type, dims_text(r.shape, "x"), r.f, r.s, 1});
    const ProfiledKernel& k = r.kernel;
    if (k.module.empty() || k.cpu_us_per_call < 0 || k.launches_per_call < 1 || k.range_launches_per_call < k.launches_per_call)
      continue;
    CpuPart c;
    c.name = k.module;
    c.type = k.type;
    c.calls_per_step = double(k.calls);
    c.launches_per_call = k.launches_per_call;
    c.original_us_per_step = double(k.calls) * k.cpu_us_per_call;
    const double per_launch = k.cpu_us_per_call / k.range_launches_per_call;
    c.op_us_per_step = c.original_us_per_step - double(k.calls) * per_launch * (k.launches_per_call - 1);
    cpu.push_back(c);
  }
  if (p.gpu_busy_us <= 0 || p.gpu_span_us <= 0)
    return kernel_time_prediction(gpu, "the profile records no GPU busy time (made before it was recorded)");
  if (p.gpu_span_us - p.gpu_busy_us < 0.02 * p.gpu_span_us)
    return kernel_time_prediction(gpu, "the GPU never waited for the CPU in the profile: its CPU time is unknown");
  if (cpu.empty())
    return kernel_time_prediction(gpu, "the profile records no CPU time of a planned module (made before it was recorded, or without --modules)");
  return predict_step(gpu, StepTimes{p.gpu_busy_us, p.gpu_span_us, p.gpu_span_us}, cpu);
}

Plan make_plan(const Profile& p, size_t top, double target) {
  Plan plan;
  plan.target = target;
  double rest = 0;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const ProfiledKernel& k = p.kernels[i];
    const bool supported = find_spec(k.type) != nullptr;
    if (i < top) {
      PlanRow r;
      r.kernel = k;
      r.f = k.share;
      r.supported = supported;
      r.s = supported ? target : 1.0;
      r.gain = amdahl(r.f, r.s);
      if (supported && !k.linear_gemms.empty()) {
        r.shape = k.linear_gemms[0].shape;
        r.shape_source = "from the nn.Linear calls that launched it (" + std::to_string(k.linear_gemms.size()) +
                         (k.linear_gemms.size() == 1 ? " shape)" : " shapes, the largest share first)");
      } else if (supported) {
        r.shape = !k.module.empty() ? k.shape : planned_shape(k.type, k.nvtx);
        r.shape_source = !k.module.empty() ? (r.shape.empty() ? "unknown: the inputs of " + k.module + " do not give it"
                                                               : "from the inputs of " + k.module)
                         : r.shape.empty() ? (k.nvtx.empty() ? "unknown: the program emitted no NVTX range around it"
                                                            : "unknown: its NVTX range (" + k.nvtx.substr(0, 60) + ") gives no sizes")
                                         : "from NVTX: " + k.nvtx.substr(0, 80);
      }
      plan.rows.push_back(r);
    }
    rest += (supported && i < top) ? k.share / target : k.share;
  }
  plan.total_gain = 1.0 / rest;
  plan.whole_step = plan_whole_step(p, plan.rows);
  return plan;
}

std::string plan_table(const Plan& plan) {
  std::string out = " rank  share (f)  type              reachable (s)  whole program 1/((1-f)+f/s)  shape\n";
  char line[512];
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const PlanRow& r = plan.rows[i];
    std::string shape = !r.supported ? (r.kernel.type == "other" ? "-" : "not a type of this build")
                        : r.shape.empty() ? "unknown: fill in" : dims_text(r.shape, "x");
    if (r.kernel.linear_gemms.size() > 1) shape += " and " + std::to_string(r.kernel.linear_gemms.size() - 1) + " more Linear shapes";
    std::snprintf(line, sizeof line, "%5zu %9.1f%%  %-16s  %12.2fx  %27.3fx  %s\n", i + 1, r.f * 100, terminal_safe(r.kernel.type).c_str(),
                  r.s, r.gain, shape.c_str());
    out += line;
  }
  out += "all of the supported kernels at " + format_numbers("%.2fx", plan.target) + ": the whole program " + format_numbers("%.3fx", plan.total_gain) + "\n";
  const StepPrediction& w = plan.whole_step;
  if (!w.whole_step) return out + "as a whole step: kernel time only (" + w.why_not + ")\n";
  out += format_numbers("as a whole step, the GPU's busy time and the CPU's (the profile's window: the GPU busy %.1f of %.1f ms, "
                        "waiting for the CPU), each planned module's op one launch in place of its kernels: %.3fx (",
                        w.before.gpu_busy_us / 1000, w.before.step_us / 1000, w.speedup) +
         bound_by(w.after) + "-bound after; the CPU times are the profiled program's, the profiler's cost in them)\n";
  for (auto& c : w.cpu_parts)
    out += "  " + terminal_safe(c.name) + format_numbers(": %.1f launches a call become one op's, %.1f ms of the CPU's removed\n",
                                                        c.launches_per_call, c.removed_us() / 1000);
  return out;
}

namespace {

/// The entries of a GEMM kernel launched by nn.Linear calls: one [[kernel]] a Linear shape of
/// matmul's version 2 (y = x W^T + bias, the weight as the Linear stores it), written at the first
/// row that holds the shape.
std::string linear_gemm_entries(const PlanRow& r, size_t row,
                                const std::map<std::pair<Dims, std::string>, std::pair<size_t, PlannedGemm>>& gemms) {
  std::string out = "\n# " + toml_comment(r.kernel.name.substr(0, 150)) + ": the GEMM of " +
                    std::to_string(r.kernel.linear_gemms.size()) + " nn.Linear shape(s), planned one entry a shape\n";
  for (const LinearGemm& lg : r.kernel.linear_gemms) {
    const auto& [first_row, g] = gemms.at({lg.shape, lg.dtype});
    if (first_row != row) {
      out += "# " + dims_text(lg.shape, "x") + ": planned with an earlier kernel\n";
      continue;
    }
    if (g.weight < kWorthARun) {
      out += "# " + dims_text(lg.shape, "x") + format_numbers(" at %.2f%% of the GPU time: left out (under ", g.weight * 100) +
             format_numbers("%.1f%%, not worth a run)\n", kWorthARun * 100);
      continue;
    }
    out += "[[kernel]]\ntype = \"matmul\"\n";
    out += "shape = [" + dims_text(lg.shape, ", ") + "]    # M, N, K, has_bias: x[M, K] times the Linear's weight[N, K]^T\n";
    out += "dtype = " + toml_string(lg.dtype.empty() ? "fp16" : lg.dtype) +
           (lg.dtype.empty() ? "    # the Linear's input did not say: check it" : "") + "\n";
    out += "weight = " + format_numbers("%.4f", g.weight) + "    # " + format_numbers("%.1f%%", g.weight * 100) + " of the GPU time\n";
    out += "baseline_us = " + format_numbers("%.2f", g.gemm.total_us / double(std::max(1LL, g.gemm.calls))) +
           "    # its GEMM kernels, per call, in the profile\n";
  }
  return out;
}

}  // namespace

// Every text of the profile (its file name, a kernel's name, its NVTX range, a module's name, the
// dtype) came from the profiled program or an edited file: each goes into the config escaped, as
// a TOML string or one comment line, so none can add a key or a table.
std::string plan_toml(const Plan& plan, const std::string& profile_name) {
  std::string out = "# [[kernel]] entries planned from " + toml_comment(profile_name) + " (autokernel plan): the whole program could\n# reach " +
                    format_numbers("%.3fx", plan.total_gain) + " if each reached " + format_numbers("%.2fx", plan.target) + ".\n";
  const auto gemms = planned_gemms(plan);
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const PlanRow& r = plan.rows[i];
    if (!r.supported) continue;
    if (!r.kernel.linear_gemms.empty() && r.kernel.type == "matmul") {
      out += linear_gemm_entries(r, i, gemms);
      continue;
    }
    if (r.f < kWorthARun) {
      out += "\n# " + toml_comment(r.kernel.type) + format_numbers(" at %.2f%% of the GPU time: left out (under ", r.f * 100) +
             format_numbers("%.1f%%, not worth a run)\n", kWorthARun * 100);
      continue;
    }
    const bool known = !r.shape.empty();
    const std::string c = known ? "" : "# ";
    out += "\n";
    if (!known) out += "# " + toml_comment(r.kernel.type + ": shape " + r.shape_source) + ". Fill in shape, then uncomment.\n";
    out += c + "[[kernel]]\n";
    out += c + "type = " + toml_string(r.kernel.type) + "\n";
    out += c + (known ? "shape = [" + dims_text(r.shape, ", ") + "]    # " + toml_comment(r.shape_source)
                      : "shape = [" + shape_placeholder(r.kernel.type) + "]") + "\n";
    out += c + "dtype = " + toml_string(r.kernel.dtype.empty() ? "fp16" : r.kernel.dtype) +
           (r.kernel.dtype.empty() ? "    # the kernel's name does not say: check it" : "") + "\n";
    out += c + "weight = " + format_numbers("%.4f", r.f) + "    # " + format_numbers("%.1f%%", r.f * 100) + " of the GPU time\n";
    out += c + "baseline_us = " + format_numbers("%.2f", r.kernel.mean_us) +
           (r.kernel.module.empty() ? "    # its mean time in the profile\n" : "    # the module's kernels, per call, in the profile\n");
    if (!r.kernel.module.empty()) out += "# module: " + toml_comment(r.kernel.module) + ", " + std::to_string(r.kernel.parts.size()) + " distinct kernels\n";
    else out += "# kernel: " + toml_comment(r.kernel.name.substr(0, 150)) + "\n";
  }
  return out;
}

}  // namespace ak
