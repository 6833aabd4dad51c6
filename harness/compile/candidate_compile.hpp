#pragma once
/// The compile step of a candidate, the same for the harness and `autokernel compile`: the
/// kernel-file contract checked on the text (the friendly first line), NVRTC in the compile
/// sandbox (the real line: compile_sandbox.hpp), the compile log cleaned of anything but the
/// candidate's own text, and the module refused if it keeps state between launches.
#include <string>
#include <vector>

#include "harness/compile/nvrtc_compile.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

struct CandidateCompile {
  bool ok = false;
  std::string message;     ///< why not, as a verdict says it (empty when ok)
  CompileOutput output;    ///< the cubin and the (cleaned) log
};

/// The template instantiations a candidate is compiled for: the entry point per dtype, or, for a
/// file with a launch plan (a user type's), every step per dtype, steps in the plan's order, the
/// dtypes in the spec's order within each step (so the first spec.dtypes.size() are the entry's,
/// or the first step's).
std::vector<std::string> candidate_name_expressions(const KernelSpec& spec, const std::string& source);

/// The compile request for a candidate of `spec`: candidate_name_expressions.
CompileRequest candidate_request(const KernelSpec& spec, const std::string& source, const std::string& filename,
                                 const std::string& arch);

/// An Error means the compiler itself could not be used; a candidate's fault is ok = false. A
/// file that made the compiler ask for anything outside CUDA's headers is refused, naming it.
/// `path` names the file in the log (its last component only).
Result<CandidateCompile> compile_candidate(const KernelSpec& spec, const std::string& source,
                                           const std::string& path, const std::string& arch);

}  // namespace ak
