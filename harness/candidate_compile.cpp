#include "harness/candidate_compile.hpp"

#include "harness/kernel_contract.hpp"
#include "harness/module_state.hpp"

namespace ak {

CompileRequest candidate_request(const KernelSpec& spec, const std::string& source, const std::string& filename,
                                 const std::string& arch) {
  CompileRequest c;
  c.source = source;
  c.filename = filename;
  c.arch = arch;
  for (DType d : spec.dtypes) c.name_expressions.push_back(entry_expression(spec, d));
  return c;
}

Result<CandidateCompile> compile_candidate(const KernelSpec& spec, const std::string& source,
                                           const std::string& filename, const std::string& arch) {
  CandidateCompile out;
  if (auto problems = contract_violations(source, spec); !problems.empty()) {
    for (auto& p : problems) out.message += (out.message.empty() ? "" : "; ") + p;
    out.message = "the file breaks the kernel contract: " + out.message;
    return out;
  }
  auto compiled = nvrtc_compile(candidate_request(spec, source, filename, arch));
  if (!compiled) return compiled.error();
  out.output = std::move(*compiled);
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
