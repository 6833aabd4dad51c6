#include "config/config.hpp"

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "common/file_text.hpp"
#include "common/toml_words.hpp"
#include "config/llm_key_source.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {
namespace {

/// Keys whose values may be secrets: their values never appear in a message.
bool is_sensitive(const std::string& key) {
  for (const char* word : {"key", "token", "secret", "password"})
    if (key.find(word) != std::string::npos && key.find("_env") == std::string::npos &&
        key.find("_file") == std::string::npos && key.find("budget") == std::string::npos)
      return true;
  return false;
}

/// Reads the keys of one table, remembering which were read so the rest can be called unknown.
class TableReader {
 public:
  TableReader(const toml::table& t, std::string section, std::string file,
              std::vector<std::string>& errors)
      : t_(t), section_(std::move(section)), file_(std::move(file)), errors_(errors) {}

  void string(const char* key, std::string& out, const std::set<std::string>& allowed = {}) {
    const toml::node* n = take(key);
    if (!n) return;
    auto v = n->value<std::string>();
    if (!v) return wrong(key, *n, "a string");
    if (!allowed.empty() && !allowed.count(*v)) {
      std::string list;
      for (auto& a : allowed) list += (list.empty() ? "" : ", ") + ("\"" + a + "\"");
      return bad(key, *n, "\"" + *v + "\"", "one of " + list);
    }
    out = *v;
  }

  /// An array of names such as environment variables: letters, digits and '_', not starting with a digit.
  void names(const char* key, std::vector<std::string>& out) {
    const toml::node* n = take(key);
    if (!n) return;
    const toml::array* a = n->as_array();
    if (!a) return wrong(key, *n, "an array of names");
    std::vector<std::string> got;
    for (const toml::node& e : *a) {
      auto v = e.value<std::string>();
      const bool name = v && !v->empty() && !std::isdigit((unsigned char)(*v)[0]) &&
                        std::all_of(v->begin(), v->end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
      if (!name) return bad(key, *n, v ? "\"" + *v + "\"" : "a non-string", "an array of variable names such as \"HTTPS_PROXY\"");
      got.push_back(*v);
    }
    out = got;
  }

  /// "all", or a list of distinct device indices.
  void devices(const char* key, std::vector<int>& out, bool& all) {
    const toml::node* n = take(key);
    if (!n) return;
    const char* expected = "\"all\" or a list of distinct device indices 0 - 63, e.g. [0, 1]";
    if (auto s = n->value<std::string>()) {
      if (*s != "all") return bad(key, *n, "\"" + *s + "\"", expected);
      all = true;
      return;
    }
    const toml::array* a = n->as_array();
    if (!a || a->empty()) return wrong(key, *n, expected);
    std::vector<int> got;
    for (const toml::node& e : *a) {
      auto v = e.value_exact<int64_t>();
      if (!v || *v < 0 || *v > 63 || std::count(got.begin(), got.end(), int(*v)))
        return bad(key, *n, v ? std::to_string(*v) : toml_value_kind(e), expected);
      got.push_back(int(*v));
    }
    out = got;
  }

  void flag(const char* key, bool& out) {
    const toml::node* n = take(key);
    if (!n) return;
    auto v = n->value_exact<bool>();
    if (!v) return wrong(key, *n, "true or false");
    out = *v;
  }

  template <typename Int>
  void integer(const char* key, Int& out, int64_t lo, int64_t hi) {
    const toml::node* n = take(key);
    if (!n) return;
    auto v = n->value_exact<int64_t>();
    if (!v) return wrong(key, *n, "an integer");
    if (*v < lo || *v > hi)
      return bad(key, *n, std::to_string(*v), range(double(lo), double(hi)));
    out = static_cast<Int>(*v);
  }

  void number(const char* key, double& out, double lo, double hi, bool lo_open = false) {
    const toml::node* n = take(key);
    if (!n) return;
    auto v = n->value<double>();  // integers are accepted where numbers are expected
    if (!v || n->is_boolean()) return wrong(key, *n, "a number");
    if (!std::isfinite(*v) || *v < lo || *v > hi || (lo_open && *v == lo))
      return bad(key, *n, fmt(*v), (lo_open ? "greater than " + fmt(lo) + " and at most " + fmt(hi)
                                            : range(lo, hi)));
    out = *v;
  }

  const toml::node* take(const char* key) {
    seen_.insert(key);
    return t_.get(key);
  }

  /// Reports every key that no reader asked for.
  void finish() {
    for (auto&& [k, v] : t_) {
      std::string key(k.str());
      if (!seen_.count(key))
        errors_.push_back(where(v) + ": unknown key '" + qualified(key) + "' (known keys in " +
                          (section_.empty() ? "the top level" : "[" + section_ + "]") + ": " +
                          known() + ")");
    }
  }

  void bad(const char* key, const toml::node& n, const std::string& value,
           const std::string& expected) {
    std::string shown = is_sensitive(key) ? "<redacted>" : value;
    errors_.push_back(where(n) + ": " + qualified(key) + " = " + shown + ": expected " + expected);
  }

  std::string where(const toml::node& n) const {
    return file_ + ":" + std::to_string(n.source().begin.line);
  }

 private:
  void wrong(const char* key, const toml::node& n, const std::string& expected) {
    errors_.push_back(where(n) + ": " + qualified(key) + " is " + toml_value_kind(n) + ": expected " +
                      expected);
  }
  std::string qualified(const std::string& key) const {
    return section_.empty() ? key : section_ + "." + key;
  }
  std::string known() const {
    std::string s;
    for (auto& k : seen_) s += (s.empty() ? "" : ", ") + k;
    return s;
  }
  static std::string fmt(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  }
  static std::string range(double lo, double hi) {
    return "a value from " + fmt(lo) + " to " + fmt(hi);
  }

  const toml::table& t_;
  std::string section_, file_;
  std::vector<std::string>& errors_;
  std::set<std::string> seen_;
};

const toml::table* section(const toml::table& root, const char* name, const std::string& file,
                           std::vector<std::string>& errors) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (!n->is_table()) {
    errors.push_back(file + ":" + std::to_string(n->source().begin.line) + ": '" + name +
                     "' must be a table, written [" + name + "]");
    return nullptr;
  }
  return n->as_table();
}

void read_run(const toml::table& t, const std::string& file, std::vector<std::string>& e,
              RunConfig& run) {
  TableReader r(t, "run", file, e);
  r.string("name", run.name);
  r.string("workdir", run.workdir);
  r.number("max_hours", run.max_hours, 0, 24 * 365);
  r.integer("max_experiments", run.max_experiments, 0, 100000000);
  r.string("git_remote", run.git_remote);
  r.finish();
  bool name_ok = !run.name.empty();
  for (char c : run.name) name_ok = name_ok && (std::isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.');
  if (!name_ok)
    e.push_back(file + ": run.name = \"" + run.name +
                "\": expected letters, digits, '-', '_' or '.' (it names a folder and a git branch)");
}

void read_gpu(const toml::table& t, const std::string& file, std::vector<std::string>& e,
              GpuConfig& gpu) {
  TableReader r(t, "gpu", file, e);
  r.integer("device", gpu.device, 0, 63);
  r.string("arch", gpu.arch);
  r.devices("devices", gpu.devices, gpu.all_devices);
  r.string("mixed_models", gpu.mixed_models, {"refuse", "per-kernel"});
  r.finish();
  bool arch_ok = gpu.arch == "auto" || (gpu.arch.rfind("sm_", 0) == 0 && gpu.arch.size() >= 5 &&
                                        std::isdigit((unsigned char)gpu.arch[3]));
  if (!arch_ok) e.push_back(file + ": gpu.arch = \"" + gpu.arch + "\": expected \"auto\" or sm_NN, e.g. sm_90a");
}

void read_harness(const toml::table& t, const std::string& file, std::vector<std::string>& e,
                  HarnessConfig& h) {
  TableReader r(t, "harness", file, e);
  r.number("stage_timeout_s", h.stage_timeout_s, 1, 3600);
  r.integer("warmup", h.warmup, 0, 10000);
  r.integer("repetitions", h.repetitions, 5, 100000);
  r.flag("torch_compile", h.torch_compile);
  r.names("worker_env", h.worker_env);
  r.integer("scratch_cap_mib", h.scratch_cap_mib, 1, int64_t(1) << 24);
  r.flag("counters", h.counters);
  r.flag("counters_for_all", h.counters_for_all);
  r.finish();
}

void read_llm(const toml::table& t, const std::string& file, std::vector<std::string>& e,
              LlmConfig& llm) {
  TableReader r(t, "llm", file, e);
  std::string provider = "builtin";
  r.string("provider", provider, {"builtin", "openai", "anthropic"});
  llm.provider = provider == "openai"      ? ProviderKind::OpenAI
                 : provider == "anthropic" ? ProviderKind::Anthropic
                                           : ProviderKind::Builtin;
  r.string("model", llm.model);
  r.string("base_url", llm.base_url);
  r.string("api_key_env", llm.api_key_env);
  r.string("api_key_file", llm.api_key_file);
  r.number("connect_timeout_s", llm.connect_timeout_s, 0.1, 600, true);
  r.number("request_timeout_s", llm.request_timeout_s, 1, 7200);
  r.integer("max_retries", llm.max_retries, 0, 100);
  r.integer("max_output_tokens", llm.max_output_tokens, 256, 1000000);
  r.integer("token_budget", llm.token_budget, 0, int64_t(1) << 50);
  r.number("cost_budget_usd", llm.cost_budget_usd, 0, 1e9);
  r.number("usd_per_mtok_input", llm.usd_per_mtok_input, 0, 1e6);
  r.number("usd_per_mtok_output", llm.usd_per_mtok_output, 0, 1e6);
  r.integer("concurrency", llm.concurrency, 1, 64);
  r.integer("max_prompt_bytes", llm.max_prompt_bytes, 8000, 10000000);
  r.flag("with_tuner", llm.with_tuner);
  r.finish();
  if (llm.provider != ProviderKind::Builtin) {
    if (llm.model.empty())
      e.push_back(file + ": llm.model is missing: provider \"" + provider + "\" needs a model name");
    if (llm.api_key_env.empty() && llm.api_key_file.empty() && llm.base_url.empty())
      e.push_back(file + ": [llm] provider \"" + provider +
                  "\" needs api_key_env or api_key_file (or a base_url of a server that takes no key)");
  }
  if (!llm.api_key_env.empty() && !llm.api_key_file.empty())
    e.push_back(file + ": [llm] has both api_key_env and api_key_file: keep one");
  check_llm_endpoint(t, file, e);
}

void read_tuner(const toml::table& t, const std::string& file, std::vector<std::string>& e, TunerConfig& tuner) {
  TableReader r(t, "tuner", file, e);
  r.flag("order_by_counters", tuner.order_by_counters);
  r.finish();
}

void read_convergence(const toml::table& t, const std::string& file, std::vector<std::string>& e,
                      ConvergenceConfig& c) {
  TableReader r(t, "convergence", file, e);
  r.integer("max_consecutive_reverts", c.max_consecutive_reverts, 1, 100000);
  r.number("peak_fraction", c.peak_fraction, 0, 1, true);
  r.number("max_hours_per_kernel", c.max_hours_per_kernel, 0, 24 * 365, true);
  r.number("target_speedup", c.target_speedup, 1, 1000, true);
  r.number("keep_threshold", c.keep_threshold, 0, 1);
  r.integer("first_candidate_tries", c.first_candidate_tries, 1, 1000);
  r.integer("max_broken_in_a_row", c.max_broken_in_a_row, 1, 1000);
  r.finish();
}

/// Whether some version of `type`'s contract takes shapes of `dims` dimensions: a run folder of an
/// older version keeps its config, and its kept file picks the version it is judged by.
bool shape_of_some_version(const std::string& type, size_t dims) {
  for (int v = 1; const KernelSpec* s = find_spec(type, v); ++v)
    if (s->shape_names.size() == dims) return true;
  return false;
}

/// "" or why a 0 in `shape` is refused, by the version of the type that takes its dimensions; ""
/// without a 0 or without such a version (that is said on its own).
std::string zero_dimension_error(const std::string& type, const Shape& shape) {
  if (std::find(shape.begin(), shape.end(), 0) == shape.end()) return "";
  for (int v = 1; const KernelSpec* s = find_spec(type, v); ++v)
    if (s->shape_names.size() == shape.size()) return s->zero_dimension_error(shape);
  return find_spec(type) ? find_spec(type)->zero_dimension_error(shape) : "";
}

/// `spec = "path"`, relative to the config: loads the user type and registers it under its name.
void read_user_type(TableReader& r, const std::string& file, std::vector<std::string>& e, KernelEntry& k) {
  std::string path;
  r.string("spec", path);
  if (path.empty()) return;
  namespace fs = std::filesystem;
  const fs::path resolved = fs::path(path).is_absolute() ? fs::path(path) : fs::path(file).parent_path() / path;
  const std::string where = file + ":" + std::to_string(k.line) + ": [[kernel]] spec = \"" + path + "\": ";
  auto user = load_user_type(resolved.lexically_normal().string());
  if (!user) return e.push_back(where + "the user type is refused:\n" + user.error().message);
  if (auto s = register_user_type(*user); !s) return e.push_back(where + s.error().message);
  k.type = user->name;
  k.user_type = std::make_shared<const UserTypeSpec>(std::move(*user));
}

void read_kernel(const toml::table& t, const std::string& file, std::vector<std::string>& e,
                 KernelEntry& k) {
  TableReader r(t, "kernel", file, e);
  k.line = int(t.source().begin.line);
  std::set<std::string> types;
  for (const auto* spec : all_specs()) types.insert(spec->type);
  if (t.get("spec")) {
    if (t.get("type")) e.push_back(file + ":" + std::to_string(k.line) + ": [[kernel]] has both type and spec: keep one");
    read_user_type(r, file, e, k);
  } else {
    r.string("type", k.type, types);
    if (!t.get("type"))
      e.push_back(file + ":" + std::to_string(k.line) + ": [[kernel]] needs a type (a built-in type) or a spec (a user type's .toml)");
  }
  const KernelSpec* spec = find_spec(k.type);
  if (const toml::node* n = r.take("shape")) {
    const toml::array* a = n->as_array();
    bool ok = a && !a->empty();
    if (ok)
      for (auto& d : *a) {
        auto v = d.value_exact<int64_t>();
        ok = ok && v && *v >= 0 && *v <= (int64_t(1) << 31);
        if (ok) k.shape.push_back(*v);
      }
    if (!ok) r.bad("shape", *n, "(as written)", "an array of positive integers, e.g. [8192, 8192] (0 only where the type takes a flag)");
    else if (spec && !shape_of_some_version(k.type, k.shape.size()))
      r.bad("shape", *n, std::to_string(k.shape.size()) + " dimensions",
            std::to_string(spec->shape_names.size()) + " dimensions for " + k.type + " (" +
                spec->shape_help() + ")");
    else if (std::string why = zero_dimension_error(k.type, k.shape); !why.empty())
      r.bad("shape", *n, shape_str(k.shape), "positive integers, 0 only where the type takes a flag (" + why + ")");
  } else if (spec) {
    k.shape = spec->bench_shape;
  }
  std::set<std::string> dtypes{"fp16", "bf16", "fp32"};
  if (k.user_type) {
    dtypes.clear();
    for (DType d : k.user_type->dtypes) dtypes.insert(dtype_name(d));
    k.dtype = dtype_name(k.user_type->dtypes.front());
  }
  r.string("dtype", k.dtype, dtypes);
  r.number("weight", k.weight, 0, 1, true);
  double baseline = 0;
  if (t.get("baseline_us")) {
    r.number("baseline_us", baseline, 0, 1e9, true);
    k.baseline_us = baseline;
  }
  r.finish();
}

}  // namespace

const char* provider_name(ProviderKind p) {
  switch (p) {
    case ProviderKind::OpenAI: return "openai";
    case ProviderKind::Anthropic: return "anthropic";
    default: return "builtin";
  }
}

std::string Config::run_dir() const {
  namespace fs = std::filesystem;
  fs::path base = fs::path(run.workdir);
  if (base.is_relative()) {
    // A config named by its bare file name lies in the working folder: its parent path is empty,
    // which fs::absolute refuses.
    fs::path folder = fs::path(path).parent_path();
    if (folder.empty()) folder = ".";
    std::error_code ec;
    const fs::path absolute = fs::absolute(folder, ec);   // fails only when the working folder is gone
    base = (ec ? folder : absolute) / base;
  }
  return (base / run.name).lexically_normal().string();
}

Result<Config> parse_config(const std::string& text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& err) {
    return error(path + ":" + std::to_string(err.source().begin.line) + ": not valid TOML: " +
                 std::string(err.description()));
  }
  Config cfg;
  cfg.path = path;
  std::vector<std::string> errors;
  TableReader top(root, "", path, errors);
  if (auto* t = section(root, "run", path, errors)) { top.take("run"); read_run(*t, path, errors, cfg.run); }
  if (auto* t = section(root, "gpu", path, errors)) { top.take("gpu"); read_gpu(*t, path, errors, cfg.gpu); }
  if (auto* t = section(root, "harness", path, errors)) { top.take("harness"); read_harness(*t, path, errors, cfg.harness); }
  if (auto* t = section(root, "llm", path, errors)) { top.take("llm"); read_llm(*t, path, errors, cfg.llm); }
  if (auto* t = section(root, "tuner", path, errors)) { top.take("tuner"); read_tuner(*t, path, errors, cfg.tuner); }
  if (auto* t = section(root, "convergence", path, errors)) { top.take("convergence"); read_convergence(*t, path, errors, cfg.convergence); }
  if (const toml::node* n = top.take("kernel")) {
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables()) {
      errors.push_back(top.where(*n) + ": 'kernel' must be written as [[kernel]] tables");
    } else {
      for (auto& item : *arr) {
        KernelEntry k;
        read_kernel(*item.as_table(), path, errors, k);
        cfg.kernels.push_back(std::move(k));
      }
    }
  }
  top.finish();
  if (cfg.kernels.empty() && errors.empty())
    errors.push_back(path + ": no [[kernel]] entries: add at least one, e.g.\n  [[kernel]]\n  type = \"rmsnorm\"\n  shape = [8192, 8192]\n  dtype = \"fp16\"");
  double total_weight = 0;
  for (auto& k : cfg.kernels) total_weight += k.weight;
  if (total_weight > 1.0 + 1e-6)
    errors.push_back(path + ": the [[kernel]] weights add up to " + std::to_string(total_weight) +
                     ": expected at most 1 (each is a share of the program's GPU time)");
  if (!errors.empty()) {
    std::string all;
    for (auto& m : errors) all += (all.empty() ? "" : "\n") + m;
    return error(all);
  }
  return cfg;
}

Result<Config> load_config(const std::string& path) {
  auto text = read_file_text(path);
  if (!text) return error(text.error().message + " (the config file: give the path of a TOML config, e.g. config/example.toml)");
  return parse_config(*text, path);
}

}  // namespace ak
