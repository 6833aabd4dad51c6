#include "daemon/profile/user_type_offer.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/file_text.hpp"
#include "common/format.hpp"
#include "common/text_escape.hpp"
#include "daemon/kernelbench/problem_spec.hpp"
#include "daemon/loop/run_directory.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {
namespace fs = std::filesystem;
namespace {

using json = nlohmann::json;

/// Modules whose forward is not a computation of their own: a reference of them means nothing.
std::string not_a_computation(const ModuleRange& m) {
  static const std::set<std::string> containers{"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"};
  if (m.class_module == "torch.nn.modules.container" || containers.count(m.class_qualname)) return "a container, not a computation";
  if (m.class_module == "torch.nn.modules.dropout")
    return "dropout: random in training and the identity in eval mode, where a reference runs";
  return "";
}

/// A dotted Python path of plain names: what importlib and getattr can follow (no "<locals>").
bool importable_path(const std::string& s) {
  static const std::regex re(R"([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)");
  return s.size() <= 200 && std::regex_match(s, re);
}

std::string class_path(const ModuleRange& m) { return m.class_module + ":" + m.class_qualname; }

/// Why the module cannot be offered, in the order a user would fix it; "" when it can.
std::string refusal(const ModuleRange& m, double f) {
  if (m.leaf < 0 || m.parameters < 0 || m.buffers < 0 || m.init.empty() || m.args < 0 || m.class_module.empty())
    return "its range does not say what a reference needs (a profile from an older autokernel): profile again with --modules";
  if (m.leaf == 0) return "not a leaf: it has child modules";
  if (m.parameters > 0) return "has parameters (" + std::to_string(m.parameters) + "): a reference would draw its own";
  if (m.buffers > 0) return "has buffers (" + std::to_string(m.buffers) + "): a reference would build its own";
  if (std::string why = not_a_computation(m); !why.empty()) return why;
  if (m.init == "no") return "needs constructor arguments: " + m.class_qualname + "() fails";
  if (m.init == "differs")
    return "built with arguments other than its defaults: " + m.class_qualname + "() is not the module the program ran";
  if (m.init != "yes") return "its no-argument construction was not tried (a CUDA graph was being captured or compiled)";
  if (m.args != 1 || m.sizes.size() != 1)
    return "several inputs (" + std::to_string(m.args) + " arguments, " + std::to_string(m.sizes.size()) +
           " tensors): a reference is made of a module called on one tensor";
  if (m.sizes[0].empty()) return "its input is a scalar: nothing to write a kernel over";
  for (long long d : m.sizes[0])
    if (d < 1 || d > 2147483647) return "its input's shape has a size of " + std::to_string(d) + ": expected 1 to 2^31 - 1";
  if (m.class_module == "__main__")
    return "defined in the program's main script, which a reference cannot import: move " + m.class_qualname + " into a module";
  if (!importable_path(m.class_module) || !importable_path(m.class_qualname))
    return "not importable by its path (" + class_path(m) + ")";
  if (f < kWorthARun) return format_numbers("at %.2f%% of the GPU time: not worth a run", f * 100);
  return "";
}

std::vector<std::string> dim_names(size_t rank) {
  if (rank == 1) return {"dim"};
  if (rank == 2) return {"batch_size", "dim"};
  if (rank == 3) return {"batch_size", "seq_len", "dim"};
  std::vector<std::string> out;
  for (size_t i = 0; i < rank; ++i) out.push_back("dim" + std::to_string(i));
  return out;
}

std::string values_text(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::string names_text(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_string(v[i]);
  return out + "]";
}

std::string shape_text(const std::vector<long long>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

/// The stage shapes, as `autokernel kernelbench` scales them down for one tensor in, one out.
StageShapes stage_shapes(const std::vector<std::string>& dims, const std::vector<long long>& sizes) {
  json a = {{"sizes", dims}, {"globals", json::object()}};
  for (size_t i = 0; i < dims.size(); ++i) a["globals"][dims[i]] = {{"value", sizes[i]}};
  a["inputs"] = json::array({{{"name", "x"}, {"shape", dims}}});
  a["outputs"] = json::array({{{"name", "out"}, {"shape", dims}}});
  return kernelbench_stage_shapes(a);
}

/// A kernel of the module that reduces, by its name; "" when none. Only names no built-in type
/// claims reach here (a leaf holding a softmax or a reduce_kernel is that type's, not offered):
/// Triton's reductions, Welford or moments kernels, a library's or a program's own.
std::string reducing_part(const std::vector<std::string>& parts) {
  static const char* const marks[] = {"triton_per_", "triton_red_", "welford", "moments", "reduce", "norm", "softmax", "cub::"};
  for (const std::string& p : parts) {
    std::string lower = p;
    for (char& c : lower) c = char(std::tolower((unsigned char)c));
    for (const char* m : marks)
      if (lower.find(m) != std::string::npos) return p;
  }
  return "";
}

std::vector<std::string> offered_dtypes(const std::string& recorded) {
  if (recorded.empty() || recorded == "fp32") return {"fp32"};
  return {recorded, "fp32"};
}

}  // namespace

std::string snake_case_type_name(const std::string& class_name) {
  std::string out;
  for (size_t i = 0; i < class_name.size(); ++i) {
    const unsigned char c = (unsigned char)class_name[i];
    const bool upper = std::isupper(c);
    if (upper && !out.empty() && out.back() != '_') {
      const unsigned char prev = (unsigned char)class_name[i - 1];
      const bool next_lower = i + 1 < class_name.size() && std::islower((unsigned char)class_name[i + 1]);
      if (std::islower(prev) || std::isdigit(prev) || (std::isupper(prev) && next_lower)) out += '_';
    }
    if (std::isalnum(c)) out += char(std::tolower(c));
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && !std::islower((unsigned char)out[0])) out.erase(0, 1);
  if (out.size() > 44) out.resize(44);  // room for a "_N" that tells two apart
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "module" : out;
}

std::vector<UserTypeOffer> user_type_offers(const Plan& plan) {
  std::vector<UserTypeOffer> out;
  std::set<std::string> taken;
  for (const PlanRow& r : plan.rows) {
    if (r.kernel.type != "other" || r.kernel.module.empty()) continue;
    auto range = parse_module_range(r.kernel.nvtx);
    if (!range) continue;  // a profile edited by hand: no range to read
    UserTypeOffer o{r.kernel, r.f, *range, "", refusal(*range, r.f)};
    if (o.refusal.empty()) {
      const std::string base = snake_case_type_name(range->name);
      o.name = base;
      for (int n = 2; find_builtin_spec(o.name) || taken.count(o.name); ++n) o.name = base + "_" + std::to_string(n);
      taken.insert(o.name);
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::string offer_reference_source(const UserTypeOffer& o) {
  const ModuleRange& m = o.range;
  const auto dims = dim_names(m.sizes[0].size());
  std::string t = "# Written by `autokernel plan --user-types`: the module " + m.class_qualname + " of " + m.class_module +
                  ",\n# as the profiled program called it, on one tensor of " + shape_text(m.sizes[0]) +
                  ". It imports the program's own class:\n# run it where the program's packages can be imported.\n";
  t += "import importlib\n\nimport torch\nimport torch.nn as nn\n\n\n";
  t += "class Model(nn.Module):\n";
  t += "    \"\"\"" + m.class_qualname + "() from " + m.class_module + ", built with no arguments as the program built it.\"\"\"\n\n";
  t += "    def __init__(self):\n        super().__init__()\n";
  t += "        cls = importlib.import_module(\"" + m.class_module + "\")\n";
  t += "        for part in \"" + m.class_qualname + "\".split(\".\"):\n            cls = getattr(cls, part)\n";
  t += "        self.module = cls()\n\n";
  t += "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return self.module(x)\n\n\n";
  for (size_t i = 0; i < dims.size(); ++i) t += dims[i] + " = " + std::to_string(m.sizes[0][i]) + "\n";
  std::string args;
  for (size_t i = 0; i < dims.size(); ++i) args += (i ? ", " : "") + dims[i];
  t += "\n\ndef get_inputs():\n    x = torch.randn(" + args + ")\n    return [x]\n\n\n";
  t += "def get_init_inputs():\n    return []\n";
  return t;
}

std::string offer_spec_text(const UserTypeOffer& o, const std::string& profile_name) {
  const ModuleRange& m = o.range;
  const auto dims = dim_names(m.sizes[0].size());
  const StageShapes s = stage_shapes(dims, m.sizes[0]);
  std::string t = "# Written by `autokernel plan --user-types` from " + toml_comment(profile_name) + ": the module " +
                  toml_comment(m.name) + format_numbers(", %.1f%% of the GPU time,", o.f * 100) + "\n# called on one " +
                  (m.dtype.empty() ? std::string("") : m.dtype + " ") + "tensor of " + shape_text(m.sizes[0]) + ". Edit freely.\n";
  t += "name = " + toml_string(o.name) + "\n";
  // Row-wise where a kernel of it reduces, over the last dimension as norms and softmaxes do;
  // elementwise otherwise. Either is a guess from the kernels' names, and the summary says so.
  const std::string reducing = reducing_part(o.kernel.parts);
  const std::string form = reducing.empty() ? "Elementwise" : "Row-wise over the last dimension (its kernel " + reducing + " reduces)";
  t += "summary = " + toml_string(class_path(m) + " on one tensor, as the profiled program calls it. " + form +
                                  ", with an output shaped like its input, is assumed (the profile records no outputs): the "
                                  "reference process checks the output's shape") + "\n";
  t += "reference = " + toml_string(o.name + ".py") + "\n";
  t += reducing.empty() ? "kind = \"elementwise\"\ngrid = \"elements\"\n" : "kind = \"rowwise\"\ngrid = \"rows\"\n";
  t += "dtypes = " + names_text(offered_dtypes(m.dtype)) + "\n";
  t += "metric = \"GBps\"\nbytes = \"tensors\"\n\n";
  t += "dims = " + names_text(dims) + "\n";
  t += "bench = " + values_text(s.bench) + "    # the profiled call's shape\n";
  t += "smoke = " + values_text(s.smoke) + "\n";
  t += "sweep = [";
  for (size_t i = 0; i < s.sweep.size(); ++i) t += (i ? ", " : "") + values_text(s.sweep[i]);
  t += "]\nstability = " + values_text(s.stability) + "\ndeterminism = " + values_text(s.determinism) + "\n";
  t += "edge = [";
  for (size_t i = 0; i < s.edge.size(); ++i) t += (i ? ", " : "") + values_text(s.edge[i]);
  t += "]\n";
  for (const char* role : {"input", "output"})
    t += std::string("\n[[tensor]]\nname = \"") + (std::string(role) == "input" ? "x" : "out") + "\"\nrole = \"" + role +
         "\"\nshape = " + names_text(dims) + "\ntype = \"float\"\n";
  return t;
}

Status write_user_type_offers(const std::vector<UserTypeOffer>& offers, const std::string& dir,
                              const std::string& profile_name, std::vector<std::string>& kept) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error("--user-types " + dir + ": cannot create the folder: " + ec.message());
  for (const UserTypeOffer& o : offers) {
    if (!o.refusal.empty()) continue;
    const std::string spec_path = (fs::path(dir) / (o.name + ".toml")).string();
    const std::string spec = offer_spec_text(o, profile_name);
    if (auto parsed = parse_user_type(spec, spec_path); !parsed)
      return error("the spec written for module " + o.range.name + " does not parse (a fault of autokernel's; please report it):\n" +
                   parsed.error().message);
    for (auto [path, text] : {std::pair{(fs::path(dir) / (o.name + ".py")).string(), offer_reference_source(o)},
                              std::pair{spec_path, spec}}) {
      std::error_code ec;
      if (fs::exists(path, ec) || ec) {
        auto old = read_file_text(path);
        if (!old) return error(old.error().message + " (where a user type offered would be written)");
        if (*old != text) {
          kept.push_back(path);
          continue;
        }
      }
      if (auto s = write_file_atomic(path, text); !s) return s.error();
    }
  }
  return ok();
}

std::string user_type_offers_toml(const std::vector<UserTypeOffer>& offers, const std::string& spec_dir, double target) {
  if (offers.empty()) return "";
  std::string out = "\n# Modules of none of autokernel's types, offered as user types (autokernel plan --user-types;\n"
                    "# docs/user-types.md, \"From a profile\"). A spec path is relative to the config file.\n";
  for (const UserTypeOffer& o : offers) {
    if (!o.refusal.empty()) continue;
    const std::string spec = (fs::path(spec_dir) / (o.name + ".toml")).generic_string();
    out += "\n[[kernel]]\nspec = " + toml_string(spec) + "    # module " + toml_comment(o.range.name) + " (" +
           toml_comment(class_path(o.range)) + "), its reference " + toml_comment(o.name) + ".py beside it\n";
    out += "dtype = " + toml_string(offered_dtypes(o.range.dtype).front()) + "\n";
    out += "weight = " + format_numbers("%.4f", o.f) + "    # " + format_numbers("%.1f%%", o.f * 100) + " of the GPU time; at " +
           format_numbers("%.2fx", target) + " the whole program " + format_numbers("%.3fx", amdahl(o.f, target)) + "\n";
    out += "baseline_us = " + format_numbers("%.2f", o.kernel.mean_us) + "    # the module's kernels, per call, in the profile\n";
  }
  for (const UserTypeOffer& o : offers)
    if (!o.refusal.empty())
      out += "\n# not offered: module " + toml_comment(o.range.name) + format_numbers(" (%.1f%% of the GPU time): ", o.f * 100) +
             toml_comment(o.refusal) + "\n";
  return out;
}

}  // namespace ak
