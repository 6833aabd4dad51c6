#include "daemon/profile/user_type_offer.hpp"

#include <cctype>
#include <optional>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"
#include "common/format.hpp"
#include "common/text_escape.hpp"
#include "daemon/kernelbench/problem_analysis.hpp"
#include "daemon/kernelbench/problem_spec.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"
#include "kernels_cuda/user_type_writer.hpp"

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

/// init=args's keyword arguments, or nothing when they are not an object of literals (a profile is
/// the program's text: nothing but numbers, strings, booleans and short lists of them passes).
std::optional<json> offer_kwargs(const ModuleRange& m) {
  json j = json::parse(m.kwargs, nullptr, false);
  if (!j.is_object() || j.size() > 16) return std::nullopt;
  auto literal = [](const json& v) { return v.is_null() || v.is_boolean() || v.is_number() || v.is_string(); };
  for (auto& [k, v] : j.items()) {
    static const std::regex name("[A-Za-z_][A-Za-z0-9_]{0,40}");
    if (!std::regex_match(k, name)) return std::nullopt;
    if (v.is_array()) {
      if (v.size() > 8) return std::nullopt;
      for (auto& e : v)
        if (!literal(e)) return std::nullopt;
    } else if (!literal(v) || (v.is_string() && v.get<std::string>().size() > 40)) {
      return std::nullopt;
    }
  }
  return j;
}

/// Why the module cannot be offered, in the order a user would fix it; "" when it can.
std::string refusal(const ModuleRange& m, double f) {
  if (m.leaf < 0 || m.parameters < 0 || m.buffers < 0 || m.init.empty() || m.args < 0 || m.class_module.empty())
    return "its range does not say what a reference needs (a profile from an older autokernel): profile again with --modules";
  if (m.leaf == 0) return "not a leaf: it has child modules";
  if (std::string why = not_a_computation(m); !why.empty()) return why;
  if (m.init != "args") {
    // A layer with weights is offered only where the hook rebuilt it from its own arguments: the
    // kernel then takes the weights as inputs, and the reference draws them as the layer does.
    if (m.parameters > 0)
      return "has parameters (" + std::to_string(m.parameters) + ") and is not a torch.nn layer its arguments rebuild";
    if (m.buffers > 0) return "has buffers (" + std::to_string(m.buffers) + ") and is not a torch.nn layer its arguments rebuild";
    if (m.init == "no") return "needs constructor arguments: " + m.class_qualname + "() fails";
    if (m.init == "differs")
      return "built with arguments other than its defaults: " + m.class_qualname + "() is not the module the program ran";
    if (m.init != "yes") return "its no-argument construction was not tried (a CUDA graph was being captured or compiled)";
  } else if (!offer_kwargs(m)) {
    return "its constructor arguments (kwargs=) are not a JSON object of numbers, strings and lists of them";
  }
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
  if (rank == 4) return {"batch_size", "channels", "height", "width"};
  if (rank == 5) return {"batch_size", "channels", "depth", "height", "width"};
  std::vector<std::string> out;   // not dim0..: dim3 is CUDA's type, which no kernel argument may be named
  for (size_t i = 0; i < rank; ++i) out.push_back("size" + std::to_string(i));
  return out;
}

/// A layer's input dims by their usual names: [N, C, L], [N, C, H, W], [N, C, D, H, W].
std::vector<std::string> layer_dim_names(size_t rank) {
  if (rank == 3) return {"batch_size", "channels", "length"};
  return dim_names(rank);
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

/// The recorded dtype first, then fp32; the range records only fp16, bf16 and fp32.
std::vector<DType> offered_dtypes(const std::string& recorded) {
  const std::optional<DType> d = parse_dtype(recorded);
  if (!d || *d == DType::F32) return {DType::F32};
  return {*d, DType::F32};
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

namespace {

/// A Python string literal holding `text` (ASCII, as nlohmann dumps with ensure_ascii).
std::string python_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The reference of a torch.nn layer rebuilt from its arguments (init=args): its weights are the
/// reference's own draw, passed to the kernel as inputs; the dims its arguments fix (a convolution's
/// channels, a LayerNorm's normalised shape) stay literals, so that only the others are scaled.
std::string rebuilt_layer_source(const UserTypeOffer& o) {
  const ModuleRange& m = o.range;
  const json kwargs = *offer_kwargs(m);
  std::set<long long> fixed_by_args;
  for (auto& [k, v] : kwargs.items()) {
    if (v.is_number_integer()) fixed_by_args.insert(v.get<long long>());
    if (v.is_array())
      for (auto& e : v)
        if (e.is_number_integer()) fixed_by_args.insert(e.get<long long>());
  }
  const std::vector<long long>& x = m.sizes[0];
  const auto names = layer_dim_names(x.size());
  std::string globals, args;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool literal = i > 0 && fixed_by_args.count(x[i]);
    if (!literal) globals += names[i] + " = " + std::to_string(x[i]) + "\n";
    args += (i ? ", " : "") + (literal ? std::to_string(x[i]) : names[i]);
  }
  std::string t = "# Written by `autokernel plan --user-types`: the layer " + m.class_qualname + " of " + m.class_module +
                  ",\n# rebuilt with the arguments the program's instance keeps, on one tensor of " + shape_text(x) +
                  ".\n# Its weights are its own draw: the kernel takes them as inputs, in named_parameters() order.\n";
  t += "import importlib\nimport json\n\nimport torch\nimport torch.nn as nn\n\n";
  t += "_KWARGS = json.loads(" + python_string(kwargs.dump(-1, ' ', true)) + ")\n\n\n";
  t += "class Model(nn.Module):\n";
  t += "    \"\"\"" + m.class_qualname + "(**_KWARGS) from " + m.class_module + ", in the mode the program called it (" +
       (m.training == 1 ? "training" : "eval") + ").\"\"\"\n\n";
  t += "    def __init__(self):\n        super().__init__()\n";
  t += "        cls = importlib.import_module(\"" + m.class_module + "\")\n";
  t += "        for part in \"" + m.class_qualname + "\".split(\".\"):\n            cls = getattr(cls, part)\n";
  t += "        self.module = cls(**_KWARGS)\n";
  if (m.training != 1) t += "        self.module.eval()\n";
  t += "\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return self.module(x)\n\n\n";
  t += globals;
  t += "\n\ndef get_inputs():\n    x = torch.randn(" + args + ")\n    return [x]\n\n\n";
  t += "def get_init_inputs():\n    return []\n";
  return t;
}

}  // namespace

std::string offer_reference_source(const UserTypeOffer& o) {
  const ModuleRange& m = o.range;
  if (m.init == "args") return rebuilt_layer_source(o);
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
  UserTypeSpec t;
  UserTypeComments c;
  c.header = {"Written by `autokernel plan --user-types` from " + profile_name + ": the module " + m.name +
                  format_numbers(", %.1f%% of the GPU time,", o.f * 100),
              "called on one " + (m.dtype.empty() ? std::string("") : m.dtype + " ") + "tensor of " + shape_text(m.sizes[0]) +
                  ". Edit freely."};
  t.name = o.name;
  // Row-wise where a kernel of it reduces, over the last dimension as norms and softmaxes do;
  // elementwise otherwise. Either is a guess from the kernels' names, and the summary says so.
  const std::string reducing = reducing_part(o.kernel.parts);
  const std::string form = reducing.empty() ? "Elementwise" : "Row-wise over the last dimension (its kernel " + reducing + " reduces)";
  t.summary = class_path(m) + " on one tensor, as the profiled program calls it. " + form +
              ", with an output shaped like its input, is assumed (the profile records no outputs): the "
              "reference process checks the output's shape";
  t.reference = o.name + ".py";
  t.kind = reducing.empty() ? "elementwise" : "rowwise";
  t.grid = reducing.empty() ? GridRule::Elements : GridRule::Rows;
  t.dtypes = offered_dtypes(m.dtype);
  t.metric = Metric::GBps;
  t.dims = dim_names(m.sizes[0].size());
  const StageShapes s = stage_shapes(t.dims, m.sizes[0]);
  t.bench = s.bench;
  c.beside["bench"] = "the profiled call's shape";
  t.smoke = s.smoke;
  t.sweep = s.sweep;
  t.stability = s.stability;
  t.determinism = s.determinism;
  t.edge = s.edge;
  for (auto [name, role] : {std::pair{"x", TensorRole::Input}, std::pair{"out", TensorRole::Output}}) {
    UserTensor tensor;
    tensor.name = name;
    tensor.role = role;
    for (const std::string& d : t.dims) tensor.shape.push_back(SizeTerm{d, 0, nullptr});
    t.tensors.push_back(std::move(tensor));
  }
  return user_type_toml(t, c);
}

namespace {

/// A file of an offer written, or kept where a user's edit is there (named in `kept`).
Status write_or_keep(const std::string& path, const std::string& text, std::vector<std::string>& kept) {
  std::error_code ec;
  if (fs::exists(path, ec) || ec) {
    auto old = read_file_text(path);
    if (!old) return error(old.error().message + " (where a user type offered would be written)");
    if (*old != text) {
      kept.push_back(path);
      return ok();
    }
  }
  return write_file_atomic(path, text);
}

/// The spec of a rebuilt layer, from the reference as `autokernel kernelbench` reads a problem (by
/// running it with `python`): its tensors, the output's shape and the stage shapes are what the
/// layer does, not a guess. An Error when the analysis cannot run; a refusal is the offer's.
Result<std::string> analysed_spec_text(UserTypeOffer& o, const std::string& reference_path, const std::string& python,
                                       const std::string& profile_name) {
  auto analysis = analyse_problem(python, reference_path);
  if (!analysis) return analysis.error();
  if (!analysis->value("accepted", false)) {
    o.refusal = "its reference is refused by the importer: " + analysis->value("refused", std::string("?"));
    return std::string();
  }
  KernelbenchUserType type = kernelbench_user_type(*analysis, o.name, o.name + ".py", reference_path);
  // The recorded dtype first, as for every offer (the importer's problems are fp32).
  type.spec.dtypes = offered_dtypes(o.range.dtype);
  type.comments.header.insert(type.comments.header.begin(),
                              "Written by `autokernel plan --user-types` from " + profile_name + ": the layer " + o.range.name +
                                  format_numbers(", %.1f%% of the GPU time,", o.f * 100) +
                                  " read by running its reference. Edit freely.");
  return user_type_toml(type.spec, type.comments);
}

}  // namespace

Status write_user_type_offers(std::vector<UserTypeOffer>& offers, const std::string& dir, const std::string& profile_name,
                              const std::string& python, std::vector<std::string>& kept) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error("--user-types " + dir + ": cannot create the folder: " + ec.message());
  for (UserTypeOffer& o : offers) {
    if (!o.refusal.empty()) continue;
    const std::string spec_path = (fs::path(dir) / (o.name + ".toml")).string();
    const std::string reference_path = (fs::path(dir) / (o.name + ".py")).string();
    if (o.range.init == "args") {
      if (auto s = write_or_keep(reference_path, offer_reference_source(o), kept); !s) return s;
      auto spec = analysed_spec_text(o, reference_path, python, profile_name);
      if (!spec) return error("module " + o.range.name + ": " + spec.error().message);
      if (!o.refusal.empty()) continue;
      if (auto parsed = parse_user_type(*spec, spec_path); !parsed)
        return error("the spec written for module " + o.range.name + " does not parse (a fault of autokernel's; please report it):\n" +
                     parsed.error().message);
      if (auto s = write_or_keep(spec_path, *spec, kept); !s) return s;
      continue;
    }
    const std::string spec = offer_spec_text(o, profile_name);
    if (auto parsed = parse_user_type(spec, spec_path); !parsed)
      return error("the spec written for module " + o.range.name + " does not parse (a fault of autokernel's; please report it):\n" +
                   parsed.error().message);
    for (auto [path, text] : {std::pair{reference_path, offer_reference_source(o)}, std::pair{spec_path, spec}})
      if (auto s = write_or_keep(path, text, kept); !s) return s;
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
    out += "dtype = " + toml_string(dtype_name(offered_dtypes(o.range.dtype).front())) + "\n";
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
