#include "daemon/kernelbench/problem_spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "common/text_escape.hpp"
#include "kernels_cuda/spec_expression.hpp"

namespace ak {
namespace {

using json = nlohmann::json;

bool plain_identifier(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
}

/// A tensor's name as a C identifier of its own: "linear.weight" -> "linear_weight"; a name a C
/// keyword, the template's T, a dim or an earlier tensor already has gets a suffix.
std::string argument_name(const std::string& torch_name, std::set<std::string>& taken) {
  static const std::set<std::string> reserved{
      "T", "auto", "bool", "break", "case", "char", "class", "const", "continue", "default", "delete", "do",
      "double", "else", "enum", "extern", "false", "float", "for", "goto", "if", "int", "long", "new",
      "register", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template", "this",
      "true", "typedef", "typename", "union", "unsigned", "void", "volatile", "while"};
  std::string base;
  for (char c : torch_name) base += std::isalnum((unsigned char)c) ? c : '_';
  if (base.empty() || std::isdigit((unsigned char)base[0])) base = "t_" + base;
  std::string name = base;
  for (int i = 1; reserved.count(name) || taken.count(name); ++i) name = base + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

/// A size as the analysis gives it: an integer, a dim's name, or an expression of the dims and the
/// integer [fixed] globals. Text that does not parse stays as the analysis wrote it (in `dim`, so
/// that it is written unchanged): reading the spec then refuses it with the reader's message.
SizeTerm size_term(const json& e, const std::vector<std::string>& dims) {
  if (!e.is_string()) return SizeTerm{"", e.get<int64_t>(), nullptr};
  const std::string text = e.get<std::string>();
  if (std::count(dims.begin(), dims.end(), text)) return SizeTerm{text, 0, nullptr};
  auto parsed = SpecExpression::parse(text);
  if (!parsed) return SizeTerm{text, 0, nullptr};
  return SizeTerm{"", 0, std::make_shared<const SpecExpression>(std::move(*parsed))};
}

std::vector<json> all_tensors(const json& a) {
  std::vector<json> out;
  for (const char* key : {"inputs", "parameters", "buffers", "outputs"})
    for (auto& t : a.value(key, json::array())) out.push_back(t);
  return out;
}

enum class DimRole { Batch, Feature, Row };

/// Batch-like: in an input's shape, never a tensor's last dimension, in no parameter or buffer.
/// Row: the last dimension of some tensor. Feature: the rest.
std::vector<DimRole> dim_roles(const json& a, const std::vector<std::string>& dims) {
  std::set<std::string> in_inputs, last, in_weights;
  for (auto& t : a.value("inputs", json::array()))
    for (auto& e : t["shape"]) if (e.is_string()) in_inputs.insert(e.get<std::string>());
  for (const char* key : {"parameters", "buffers"})
    for (auto& t : a.value(key, json::array()))
      for (auto& e : t["shape"]) if (e.is_string()) in_weights.insert(e.get<std::string>());
  for (auto& t : all_tensors(a))
    if (!t["shape"].empty() && t["shape"].back().is_string()) last.insert(t["shape"].back().get<std::string>());
  std::vector<DimRole> roles;
  for (auto& d : dims) {
    if (last.count(d)) roles.push_back(DimRole::Row);
    else if (in_inputs.count(d) && !in_weights.count(d)) roles.push_back(DimRole::Batch);
    else roles.push_back(DimRole::Feature);
  }
  return roles;
}

int64_t largest_tensor(const json& a, const std::vector<std::string>& dims, const DimValues& v) {
  int64_t largest = 1;
  for (auto& t : all_tensors(a)) {
    int64_t n = 1;
    for (auto& e : t["shape"]) {
      if (e.is_number_integer()) n *= e.get<int64_t>();
      else n *= v[size_t(std::find(dims.begin(), dims.end(), e.get<std::string>()) - dims.begin())];
    }
    largest = std::max(largest, n);
  }
  return largest;
}

/// Halves the largest size (the last of equals) until the largest tensor fits; an odd pattern
/// stays odd, so a shape made of sizes that are multiples of nothing stays that way.
DimValues fit(const json& a, const std::vector<std::string>& dims, DimValues v, int64_t max_elements) {
  while (largest_tensor(a, dims, v) > max_elements) {
    size_t at = 0;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] >= v[at]) at = i;
    if (v[at] <= 1) break;  // integer literals alone exceed the budget: keep the smallest there is
    const bool odd = v[at] % 2 == 1;
    v[at] /= 2;
    if (odd) v[at] |= 1;
  }
  return v;
}

DimValues pattern(const std::vector<DimRole>& roles, int64_t batch, int64_t feature, int64_t row) {
  DimValues v;
  for (auto r : roles) v.push_back(r == DimRole::Batch ? batch : r == DimRole::Feature ? feature : row);
  return v;
}

/// Stage shapes by pattern, for an analysis that names its sizes ("sizes", "globals") but was not
/// run at any shape: plan --user-types' one tensor in, one out.
StageShapes pattern_stage_shapes(const json& a, int64_t max_elements) {
  const auto dims = a.value("sizes", std::vector<std::string>{});
  const auto roles = dim_roles(a, dims);
  StageShapes s;
  for (auto& d : dims) s.bench.push_back(a["globals"][d]["value"].get<int64_t>());
  auto add = [&](std::vector<DimValues>& list, DimValues v, int64_t budget) {
    v = fit(a, dims, std::move(v), budget);
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  s.smoke = fit(a, dims, pattern(roles, 4, 64, 1000), std::max<int64_t>(max_elements / 64, 1));
  add(s.sweep, pattern(roles, 64, 256, 4096), max_elements);
  add(s.sweep, pattern(roles, 33, 33, 1531), max_elements);
  add(s.sweep, pattern(roles, 128, 128, 2048), max_elements);
  add(s.sweep, pattern(roles, 7, 3, 65537), max_elements);
  add(s.sweep, pattern(roles, 1531, 7, 33), max_elements);
  s.stability = s.determinism = s.sweep.front();
  add(s.edge, pattern(roles, 1, 1, 1), max_elements);
  add(s.edge, pattern(roles, 1, 3, 65537), max_elements);
  add(s.edge, pattern(roles, 3, 7, 7), max_elements);
  return s;
}

DimValues dim_values(const json& v) {
  DimValues out;
  for (auto& e : v) out.push_back(e.get<int64_t>());
  return out;
}

/// Comments of the spec for what the analysis found beside the tensors: globals computed from
/// others, numbers get_inputs() passes to forward.
std::vector<std::string> notes(const json& a) {
  std::vector<std::string> t;
  // Each object held by name: items() of a temporary would outlive it.
  const json derived = a.value("derived", json::object()), constants = a.value("constant_inputs", json::object());
  for (auto& [k, from] : derived.items()) {
    std::string names;
    for (auto& f : from) names += (names.empty() ? "" : ", ") + f.get<std::string>();
    if (plain_identifier(k) && std::all_of(from.begin(), from.end(), [](const json& f) { return plain_identifier(f); }))
      t.push_back(k + " is computed from " + names + ": the reference executes the module again at each shape");
  }
  for (auto& [k, v] : constants.items())
    if (plain_identifier(k))
      t.push_back("get_inputs() also passes " + k + " = " + v.dump() + " to forward, the same at every shape: no argument of the kernel");
  return t;
}

/// What a judged launch at the timed shape holds on the GPU in fp32, as the analysis estimates it.
std::string memory_comment(const json& a) {
  const json m = a.value("memory", json::object());
  if (!m.is_object() || !m.contains("pool_bytes") || !m.contains("reference_bytes")) return "";
  char line[200];
  std::snprintf(line, sizeof line, "at bench in fp32: the pool %.3g GB, the reference process ~%.3g GB (estimated)%s",
                m["pool_bytes"].get<double>() / 1e9, m["reference_bytes"].get<double>() / 1e9,
                m["pool_bytes"].get<double>() + m["reference_bytes"].get<double>() > 80e9 ? ": more than an 80 GB GPU holds" : "");
  return line;
}

/// The grid rule a file without a launch plan (ak_launch) is launched by; a file with one needs none.
std::string grid_comment(const std::string& kind) {
  static const std::set<std::string> planned{"convolution", "transposed_convolution", "pooling", "normalization", "scan",
                                             "index", "loss", "matmul", "model"};
  return planned.count(kind) ? "for a file without ak_launch (one kernel); a file with it launches its own steps" : "";
}

}  // namespace

std::string kernelbench_type_name(const std::string& problem_path) {
  std::string stem = std::filesystem::path(problem_path).stem().string(), name = "kb_";
  for (char c : stem) {
    const char l = char(std::tolower((unsigned char)c));
    if ((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9')) name += l;
    else if (name.back() != '_') name += '_';
  }
  if (name.size() > 48) name.resize(48);
  while (name.size() > 3 && name.back() == '_') name.pop_back();
  return name;
}

StageShapes kernelbench_stage_shapes(const json& a, int64_t max_elements) {
  if (!a.contains("stages")) return pattern_stage_shapes(a, max_elements);
  const json& st = a.at("stages");
  StageShapes s;
  s.bench = dim_values(st.at("bench"));
  s.smoke = dim_values(st.at("smoke"));
  s.stability = dim_values(st.at("stability"));
  s.determinism = dim_values(st.at("determinism"));
  for (auto& v : st.at("sweep")) s.sweep.push_back(dim_values(v));
  for (auto& v : st.at("edge")) s.edge.push_back(dim_values(v));
  return s;
}

std::vector<std::string> kernelbench_argument_names(const json& a) {
  const auto dims = a.value("dims", std::vector<std::string>{});
  std::set<std::string> taken(dims.begin(), dims.end());
  std::vector<std::string> names;
  for (const char* key : {"inputs", "parameters", "buffers", "outputs"})
    for (auto& tensor : a.value(key, json::array())) names.push_back(argument_name(tensor["name"], taken));
  return names;
}

KernelbenchUserType kernelbench_user_type(const json& a, const std::string& name, const std::string& reference,
                                          const std::string& source_path, const std::string& starter) {
  KernelbenchUserType out;
  UserTypeSpec& t = out.spec;
  UserTypeComments& c = out.comments;
  c.header.push_back("Written by `autokernel kernelbench` from the problem file below; edit freely.");
  t.name = name;
  t.summary = a.value("summary", std::string());
  if (t.summary.empty()) t.summary = "KernelBench problem " + std::filesystem::path(source_path).filename().string();
  t.reference = reference;
  t.kind = a["kind"];
  const std::string grid = a["grid"];
  t.grid = grid == "rows" ? GridRule::Rows : grid == "tiles" ? GridRule::Tiles : GridRule::Elements;
  if (std::string why = grid_comment(t.kind); !why.empty()) c.beside["grid"] = why;
  t.dtypes = {DType::F32};
  t.starter = starter;
  if (!starter.empty()) c.beside["starter"] = "written from the forward's elementwise ops; judged like any file";
  const json flops = a.value("flops", json());
  t.metric = flops.is_string() ? Metric::TFLOPS : Metric::GBps;
  if (flops.is_string()) t.flops = flops.get<std::string>();
  t.dims = a.value("dims", std::vector<std::string>{});
  const StageShapes s = kernelbench_stage_shapes(a);
  t.bench = s.bench;
  if (std::string memory = memory_comment(a); !memory.empty()) c.below["bench"] = {memory};
  t.smoke = s.smoke;
  t.sweep = s.sweep;
  t.stability = s.stability;
  t.determinism = s.determinism;
  t.edge = s.edge;
  const json fixed = a.value("fixed", json::object());
  for (auto& [k, v] : fixed.items())
    if (plain_identifier(k) && v.is_number()) t.fixed.emplace_back(k, v.dump());
  if (auto lines = notes(a); !lines.empty()) c.below["fixed"] = lines;
  const std::vector<std::string> names = kernelbench_argument_names(a);
  size_t next = 0;
  for (auto& [key, role] : std::vector<std::pair<const char*, TensorRole>>{
           {"inputs", TensorRole::Input}, {"parameters", TensorRole::Parameter}, {"buffers", TensorRole::Buffer},
           {"outputs", TensorRole::Output}})
    for (auto& tensor : a.value(key, json::array())) {
      UserTensor u;
      u.name = names[next++];
      u.role = role;
      for (auto& e : tensor["shape"]) u.shape.push_back(size_term(e, t.dims));
      u.int64 = tensor.value("type", std::string("float")) == "int64";
      for (auto [bound, slot] : {std::pair{"low", &u.low}, std::pair{"high", &u.high}})
        if (u.int64 && tensor.contains(bound) && (tensor[bound].is_string() || tensor[bound].is_number_integer()))
          *slot = size_term(tensor[bound], t.dims);
      t.tensors.push_back(std::move(u));
    }
  return out;
}

std::string kernelbench_spec_text(const json& a, const std::string& name, const std::string& reference,
                                  const std::string& source_path, const std::string& starter) {
  const KernelbenchUserType type = kernelbench_user_type(a, name, reference, source_path, starter);
  return user_type_toml(type.spec, type.comments);
}

std::string kernelbench_refusals_text(const std::vector<std::pair<std::string, std::string>>& refusals) {
  auto cell = [](std::string s) {
    for (char& c : s)
      if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    return s;
  };
  std::string t = "file\treason\n";
  for (auto& [file, reason] : refusals) t += cell(file) + "\t" + cell(reason) + "\n";
  return t;
}

std::string kernelbench_config_text(const std::string& run_name, const std::vector<std::string>& spec_paths,
                                    const std::vector<BuiltinProblem>& builtins, bool every_spec_has_a_starter) {
  std::string t = "# Written by `autokernel kernelbench`: one [[kernel]] per KernelBench problem it accepted: a built-in\n"
                  "# type's entry where the problem computes one, else the problem's user type.\n"
                  "# Check it with `autokernel config check FILE`; run it with `autokernel run --config FILE`.\n\n";
  t += "[run]\nname = " + toml_string(run_name) + "\nworkdir = \"runs\"             # relative to this file\n\n";
  t += "[llm]\n";
  if (every_spec_has_a_starter)
    t += "# Every entry has a first file (a built-in type's starter, or one written from the problem's elementwise\n"
         "# ops): the builtin tuner runs them without an LLM. An LLM (docs/llm.md) edits them further.\n";
  else
    t += "# A user type without a starter gets its first kernel from the LLM, so choose one here (docs/llm.md);\n"
         "# with the builtin tuner alone `run` stops and names the type that has none (`kernelbench --offline`\n"
         "# leaves those out).\n";
  t += "# provider = \"anthropic\"\n# model = \"claude-sonnet-4-5\"\n# api_key_env = \"ANTHROPIC_API_KEY\"\n";
  // Equal shares of a program's time: the problems are independent, and the weights add up to at most 1.
  const size_t entries = spec_paths.size() + builtins.size();
  const double weight = entries == 0 ? 0 : std::floor(10000.0 / double(entries)) / 10000.0;
  char w[32];
  std::snprintf(w, sizeof w, "%.4f", weight);
  // The built-in entries first: their evaluations are the cheap ones (no reference process, no
  // torch.compile), so a run bounded in time reaches every one of them.
  for (auto& b : builtins) t += builtin_entry_text(b, w);
  for (auto& p : spec_paths)
    t += "\n[[kernel]]\nspec = " + toml_string(p) + "\ndtype = \"fp32\"\nweight = " + w + "\n";
  return t;
}

}  // namespace ak
