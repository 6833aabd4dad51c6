#include "harness/compile/candidate_compile.hpp"

#include <filesystem>

#include "harness/compile/compile_log_filter.hpp"
#include "harness/compile/compile_sandbox.hpp"
#include "harness/compile/kernel_contract.hpp"
#include "harness/compile/module_state.hpp"
#include "kernels_cuda/launch_plan.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {

std::vector<std::string> candidate_name_expressions(const KernelSpec& spec, const std::string& source) {
  std::vector<std::string> names;
  // A plan that cannot be read was refused by the contract's check before the compile; here it
  // compiles as a plain file, whose load then says what is missing.
  auto steps = spec.launch_plans ? launch_step_names(source) : Result<std::vector<std::string>>(std::vector<std::string>{});
  if (steps && !steps->empty()) {
    for (const std::string& step : *steps)
      for (DType d : spec.dtypes) names.push_back(step + "<" + dtype_cuda_type(d) + ">");
    return names;
  }
  for (DType d : spec.dtypes) names.push_back(entry_expression(spec, d));
  return names;
}

namespace {

/// A user type's plan checked at every declared shape before the compile, so that `autokernel
/// compile` says it without a GPU: CUDA's grid and block limits and an H100's shared memory; the
/// load checks again with the GPU's own limits and the run's scratch cap.
std::string plan_problem(const KernelSpec& spec, const std::string& source) {
  const UserTypeSpec* user = spec.launch_plans ? find_user_type(spec.type) : nullptr;
  if (!user) return "";
  auto text = launch_plan_source_text(source);
  if (!text || !*text) return "";   // no plan, or one the contract's check already refused
  auto plan = parse_launch_plan(**text);
  if (!plan) return "";
  LaunchLimits limits;
  limits.scratch_cap_bytes = UINT64_MAX;
  auto checked = check_launch_plan(*plan, *user, limits);
  return checked ? "" : checked.error().message;
}

}  // namespace

CompileRequest candidate_request(const KernelSpec& spec, const std::string& source, const std::string& filename,
                                 const std::string& arch) {
  CompileRequest c;
  c.source = source;
  c.filename = filename;
  c.arch = arch;
  c.name_expressions = candidate_name_expressions(spec, source);
  return c;
}

Result<CandidateCompile> compile_candidate(const KernelSpec& spec, const std::string& source,
                                           const std::string& path, const std::string& arch) {
  CandidateCompile out;
  // The program's name is only a name: NVRTC looks beside it for quoted includes, so it must not
  // point into the user's folders.
  std::string filename = std::filesystem::path(path).filename().string();
  if (filename.empty() || filename == "." || filename == "..") filename = spec.type + ".cu";
  // Before any check reads it: a file over the size limit is not read at all.
  if (const CompileLimits limits = compile_limits(); source.size() > limits.source_bytes) {
    out.message = "the compile went over " + describe_limit(CompileLimit::SourceSize, limits) + ": the file is " +
                  std::to_string(source.size()) + " bytes; make the file smaller";
    return out;
  }
  if (auto problems = contract_violations(source, spec); !problems.empty()) {
    for (auto& p : problems) out.message += (out.message.empty() ? "" : "; ") + p;
    out.message = "the file breaks the kernel contract: " + out.message;
    return out;
  }
  if (std::string why = plan_problem(spec, source); !why.empty()) {
    out.message = "the file's launch plan cannot run: " + why;
    return out;
  }
  auto compiled = compile_in_sandbox(candidate_request(spec, source, filename, arch));
  if (!compiled) return compiled.error();
  out.output = std::move(compiled->output);
  if (compiled->limit != CompileLimit::None) {
    // The message names the limit (compile_limits.hpp); the log says what was measured.
    out.message = "the compile went over " + describe_limit(compiled->limit, compile_limits()) +
                  " (see the compile log); make the file smaller or simpler";
    return out;
  }
  out.output.log = keep_candidate_text(out.output.log, filename, cuda_include_dir());
  if (!compiled->refused.empty()) {
    std::string paths;
    for (auto& p : compiled->refused) paths += (paths.empty() ? "" : ", ") + std::string("\"") + p + "\"";
    out.message = "the file made the compiler ask for " + paths + ", which it may not read: only CUDA's own headers "
                  "(under " + cuda_include_dir() + ") may be included; put everything else in the file";
    out.output.ok = false;
    out.output.cubin.clear();
    return out;
  }
  if (!out.output.ok) {
    out.message = "NVRTC could not compile the file (see the compile log)";
    return out;
  }
  if (auto state = module_state(out.output.cubin); !state.empty()) {
    out.message = describe_module_state(state);
    return out;
  }
  out.ok = true;
  return out;
}

}  // namespace ak
