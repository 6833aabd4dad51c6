#include "daemon/kernelbench/builtin_problem.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "common/text_escape.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {
namespace {

using json = nlohmann::json;

std::string cell(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string shape_cell(const std::vector<long long>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::string mapping_text(const json& match) {
  std::string s;
  for (const char* key : {"args", "outputs"}) {
    const json names = match.value(key, json::object());   // items() of a temporary would outlive it
    for (auto& [type_name, problem_name] : names.items())
      s += (s.empty() ? "" : "; ") + type_name + "=" + (problem_name.is_string() ? problem_name.get<std::string>() : "?");
  }
  return s + (s.empty() ? "" : "; ") + "cols = the last " + std::to_string(match.value("cols_axes", 1)) + " axes";
}

}  // namespace

Result<BuiltinProblem> builtin_problem_of(const json& analysis, const std::string& problem, const std::string& spec,
                                          const std::string& dtype) {
  const json match = analysis.value("builtin", json());
  if (!match.is_object()) return error("no built-in type matches: " + analysis.value("builtin_why_not", std::string("not read")));
  BuiltinProblem p;
  p.type = match.value("type", std::string());
  const KernelSpec* type = find_builtin_spec(p.type);
  if (!type) return error("the analyser matched \"" + p.type + "\", which is no built-in type");
  // A size is positive, or 0 where the type's shape takes a flag (matmul's has_bias).
  for (auto& v : match.value("shape", json::array())) {
    const size_t at = p.shape.size();
    const bool flag = std::count(type->zero_dims.begin(), type->zero_dims.end(), at) > 0;
    if (v.is_number_integer() && v.get<long long>() >= (flag ? 0 : 1)) p.shape.push_back(v.get<long long>());
  }
  if (p.shape.size() != type->shape_names.size())
    return error("the match's shape " + match.value("shape", json::array()).dump() + " is not one of " + p.type + "'s " +
                 std::to_string(type->shape_names.size()) + " sizes");
  if (std::any_of(p.shape.begin(), p.shape.end(), [](long long v) { return v > (1LL << 31) - 1; }))
    return error(p.type + " takes int sizes; the problem's are " + shape_cell(p.shape));
  // The analyser matches a GEMM as nn.Linear computes it (y = x W^T + bias, W [N, K]): matmul's
  // version 2. Version 1 (c = a @ b, b [K, N]) is another layout.
  if (p.type == "matmul" && type->contract_version < 2)
    return error("matmul's contract here is version " + std::to_string(type->contract_version) +
                 " (c = a @ b, b [K, N]), not the Linear layout the problem has");
  auto d = parse_dtype(dtype);
  if (!d || std::find(type->dtypes.begin(), type->dtypes.end(), *d) == type->dtypes.end())
    return error(p.type + " does not take " + dtype);
  p.dtype = dtype;
  p.problem = problem;
  p.spec = spec;
  p.mapping = mapping_text(match);
  return p;
}

void assign_builtin_tags(std::vector<BuiltinProblem>& problems) {
  std::map<std::string, int> count, seen;
  for (auto& p : problems) count[p.type]++;
  for (auto& p : problems) p.tag = count[p.type] > 1 ? p.type + "-" + std::to_string(++seen[p.type]) : p.type;
}

std::string builtin_entry_text(const BuiltinProblem& p, const std::string& weight) {
  std::string shape = "[";
  for (size_t i = 0; i < p.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(p.shape[i]);
  return "\n# KernelBench problem " + cell(p.problem) + " computes " + p.type + " (" + cell(p.mapping) +
         "): the built-in type's starter and variants, scored as the problem (" + cell(p.spec) + ")\n[[kernel]]\ntype = " +
         toml_string(p.type) + "\nshape = " + shape + "]\ndtype = " + toml_string(p.dtype) + "\nweight = " + weight + "\n";
}

std::string builtin_problems_text(const std::vector<BuiltinProblem>& problems) {
  std::string t = "tag\ttype\tshape\tdtype\tproblem\tspec\tmapping\n";
  for (auto& p : problems)
    t += cell(p.tag) + "\t" + p.type + "\t" + shape_cell(p.shape) + "\t" + p.dtype + "\t" + cell(p.problem) + "\t" +
         cell(p.spec) + "\t" + cell(p.mapping) + "\n";
  return t;
}

Result<std::vector<BuiltinProblem>> read_builtin_problems(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error(path + ": cannot read (the built-in problems `autokernel kernelbench` writes beside its config)");
  std::vector<BuiltinProblem> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (number == 1 && line.rfind("tag\ttype\t", 0) == 0) continue;
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    auto bad = [&] {
      return error(path + " line " + std::to_string(number) +
                   ": expected tag, type, shape (RxC), dtype, problem, spec, mapping separated by tabs; write it again "
                   "with `autokernel kernelbench`");
    };
    if (cells.size() != 7 || cells[0].empty() || !find_builtin_spec(cells[1])) return bad();
    BuiltinProblem p{cells[0], cells[1], {}, cells[3], cells[4], cells[5], cells[6]};
    std::stringstream dims(cells[2]);
    for (std::string v; std::getline(dims, v, 'x');) {
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 12) return bad();
      p.shape.push_back(std::stoll(v));
    }
    if (p.shape.empty()) return bad();
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ak
