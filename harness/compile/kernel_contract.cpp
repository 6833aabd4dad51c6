#include "harness/compile/kernel_contract.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include "kernels_cuda/launch_plan.hpp"

namespace ak {

std::string entry_expression(const KernelSpec& spec, DType d) {
  return spec.entry + "<" + dtype_cuda_type(d) + ">";
}

std::string reference_expression(const KernelSpec& spec, DType d, ReferenceOutput out) {
  return spec.reference_entry + "<" + dtype_cuda_type(d) + ", " +
         (out == ReferenceOutput::Fp32 ? "float" : dtype_cuda_type(d)) + ">";
}

std::vector<std::string> reference_expressions(const KernelSpec& spec) {
  std::vector<std::string> all;
  for (auto out : {ReferenceOutput::Fp32, ReferenceOutput::InputDtype})
    for (DType d : spec.dtypes)
      if (auto e = reference_expression(spec, d, out); std::find(all.begin(), all.end(), e) == all.end())
        all.push_back(e);  // <float, float> is both
  return all;
}

std::vector<std::string> contract_violations(const std::string& source, const KernelSpec& spec) {
  std::vector<std::string> problems;
  if (source.find_first_not_of(" \t\r\n") == std::string::npos) {
    problems.push_back("the file is empty");
    return problems;
  }
  static const std::regex include(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  static const std::regex cuda_header(R"(^(cuda[_/a-z0-9]*\.h|cuda/.*|cooperative_groups(\.h|/.*)|mma\.h|sm_\d+_intrinsics\.h|vector_types\.h|vector_functions\.h|math_constants\.h)$)");
  std::smatch m;
  size_t line_no = 0;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    ++line_no;
    if (std::regex_search(line, m, include) &&
        (m[1] == "\"" || !std::regex_match(m[2].str(), cuda_header)))
      problems.push_back("line " + std::to_string(line_no) + ": #include " + m[1].str() + m[2].str() +
                         (m[1] == "\"" ? "\"" : ">") +
                         ": only CUDA's own headers may be included (cuda_fp16.h, cuda_bf16.h, "
                         "cuda/..., cooperative_groups, mma.h); put everything else in the file");
  }
  auto plan = launch_plan_source_text(source);
  if (!plan) {
    problems.push_back(plan.error().message);
  } else if (*plan && !spec.launch_plans) {
    problems.push_back(std::string("the file declares ") + kLaunchPlanSymbol + ", and " + spec.type +
                       " is a built-in type whose launch is its spec's: remove it and define " + spec.abi());
  } else if (*plan) {
    auto parsed = parse_launch_plan(**plan);
    if (!parsed) problems.push_back(parsed.error().message);
    else
      for (const std::string& step : parsed->step_names())
        if (!std::regex_search(source, std::regex("\\b" + step + "\\s*\\(")))
          problems.push_back("the step '" + step + "' of ak_launch is missing: the file must define template <typename T> "
                             "__global__ void " + step + "(...) with the parameters every step takes (docs/user-types.md, \"Launch plans\")");
  } else {
    if (!std::regex_search(source, std::regex("\\b" + spec.entry + "\\s*\\(")))
      problems.push_back("the entry point '" + spec.entry + "' is missing: the file must define " + spec.abi());
    if (!std::regex_search(source, std::regex(std::string("\\b") + kBlockThreadsSymbol + "\\b")))
      problems.push_back(std::string("the launch constant '") + kBlockThreadsSymbol +
                         "' is missing: define extern \"C\" __constant__ int " + kBlockThreadsSymbol +
                         " = <threads per block>;");
  }
  if (std::regex_search(source, std::regex(R"(\bint\s+main\s*\()")))
    problems.push_back("the file defines main(): a kernel file holds device code only");
  return problems;
}

}  // namespace ak
