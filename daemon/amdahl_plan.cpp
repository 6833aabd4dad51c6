#include "daemon/amdahl_plan.hpp"

#include "common/format.hpp"

#include <cstdio>

#include "kernels_cuda/registry.hpp"

namespace ak {
namespace {

/// The NVTX shape in the terms of a row-wise type: [rows, cols] over the last dimension.
std::vector<long long> rowwise_shape(const std::vector<long long>& dims) {
  if (dims.empty()) return {};
  long long rows = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) rows *= dims[i];
  return {rows, dims.back()};
}

}  // namespace

double amdahl(double f, double s) { return 1.0 / ((1.0 - f) + f / s); }

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
      if (supported) {
        auto dims = nvtx_first_shape(k.nvtx);
        r.shape = rowwise_shape(dims);
        r.shape_source = r.shape.empty() ? (k.nvtx.empty() ? "unknown: the program emitted no NVTX range around it"
                                                            : "unknown: its NVTX range (" + k.nvtx.substr(0, 60) + ") gives no sizes")
                                         : "from NVTX: " + k.nvtx.substr(0, 80);
      }
      plan.rows.push_back(r);
    }
    rest += (supported && i < top) ? k.share / target : k.share;
  }
  plan.total_gain = 1.0 / rest;
  return plan;
}

std::string plan_table(const Plan& plan) {
  std::string out = " rank  share (f)  type              reachable (s)  whole program 1/((1-f)+f/s)  shape\n";
  char line[512];
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const PlanRow& r = plan.rows[i];
    std::string shape = !r.supported ? (r.kernel.type == "other" ? "-" : "not a type of this build")
                        : r.shape.empty() ? "unknown: fill in" : std::to_string(r.shape[0]) + "x" + std::to_string(r.shape[1]);
    std::snprintf(line, sizeof line, "%5zu %9.1f%%  %-16s  %12.2fx  %27.3fx  %s\n", i + 1, r.f * 100, r.kernel.type.c_str(),
                  r.s, r.gain, shape.c_str());
    out += line;
  }
  out += "all of the supported kernels at " + format_numbers("%.2fx", plan.target) + ": the whole program " + format_numbers("%.3fx", plan.total_gain) + "\n";
  return out;
}

std::string plan_toml(const Plan& plan, const std::string& profile_name) {
  std::string out = "# [[kernel]] entries planned from " + profile_name + " (autokernel plan): the whole program could\n# reach " +
                    format_numbers("%.3fx", plan.total_gain) + " if each reached " + format_numbers("%.2fx", plan.target) + ".\n";
  for (auto& r : plan.rows) {
    if (!r.supported) continue;
    const bool known = !r.shape.empty();
    const std::string c = known ? "" : "# ";
    out += "\n";
    if (!known) out += "# " + r.kernel.type + ": shape " + r.shape_source + ". Fill in shape, then uncomment.\n";
    out += c + "[[kernel]]\n";
    out += c + "type = \"" + r.kernel.type + "\"\n";
    out += c + (known ? "shape = [" + std::to_string(r.shape[0]) + ", " + std::to_string(r.shape[1]) + "]    # " + r.shape_source
                      : "shape = [ROWS, COLS]") + "\n";
    out += c + "dtype = \"" + (r.kernel.dtype.empty() ? "fp16" : r.kernel.dtype) + "\"" +
           (r.kernel.dtype.empty() ? "    # the kernel's name does not say: check it" : "") + "\n";
    out += c + "weight = " + format_numbers("%.4f", r.f) + "    # " + format_numbers("%.1f%%", r.f * 100) + " of the GPU time\n";
    out += c + "baseline_us = " + format_numbers("%.2f", r.kernel.mean_us) + "    # its mean time in the profile\n";
    out += "# kernel: " + r.kernel.name.substr(0, 150) + "\n";
  }
  return out;
}

}  // namespace ak
