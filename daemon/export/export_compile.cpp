#include "daemon/export/export_compile.hpp"

#include <nvrtc.h>

#include <regex>

#include "harness/compile/candidate_compile.hpp"
#include "harness/compile/kernel_contract.hpp"
#include "kernels_cuda/launch_plan.hpp"

namespace ak {

Result<std::vector<ExportedModule>> compile_for_export(const KernelSpec& spec, const std::string& source,
                                                       const std::string& origin, const std::vector<std::string>& archs) {
  std::vector<ExportedModule> out;
  static const std::regex arch_name(R"(sm_\d+[a-z]?)");
  // A lowered name goes into the launcher's C++ as a string literal: only a mangled name's characters.
  static const std::regex mangled(R"([A-Za-z0-9_$]+)");
  if (auto steps = launch_step_names(source); spec.launch_plans && steps && !steps->empty())
    return error(origin + ": the file launches its op as a plan of " + std::to_string(steps->size()) +
                 " steps (ak_launch), and the export's launchers call one entry point: it is not exported");
  for (const std::string& arch : archs) {
    if (!std::regex_match(arch, arch_name)) return error("--arch " + arch + ": expected a GPU architecture such as sm_90a or sm_80");
    auto compiled = compile_candidate(spec, source, origin, arch);
    if (!compiled) return error(origin + ": cannot compile for " + arch + ": " + compiled.error().message);
    if (!compiled->ok)
      return error(origin + ": the harness refuses it for " + arch + ", so it is not exported: " + compiled->message +
                   (compiled->output.log.empty() ? "" : "\n" + compiled->output.log));
    ExportedModule m{arch, std::move(compiled->output.cubin), {}};
    for (DType d : spec.dtypes) {
      const std::string want = entry_expression(spec, d);
      std::string lowered;
      for (auto& f : compiled->output.functions)
        if (f.name_expression == want) lowered = f.lowered_name;
      if (lowered.empty()) return error(origin + ": the module compiled for " + arch + " has no " + want);
      if (!std::regex_match(lowered, mangled))
        return error(origin + ": the entry point of " + want + " has a name no C++ compiler mangles that way: " + lowered);
      m.entries.push_back(lowered);
    }
    out.push_back(std::move(m));
  }
  if (out.empty()) return error("no architecture to compile " + origin + " for: give --arch, e.g. sm_90a");
  for (auto& m : out)
    if (m.entries != out.front().entries)
      return error(origin + ": its entry points are named differently for " + out.front().arch + " and " + m.arch +
                   ": export one architecture at a time");
  return out;
}

int nvrtc_cuda_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return major * 1000 + minor * 10;
}

}  // namespace ak
