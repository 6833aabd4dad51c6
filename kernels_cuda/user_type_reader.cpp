// parse_user_type(): a spec's TOML text read into a UserTypeSpec and checked, every problem
// reported with its file, line and key (docs/user-types.md, "The spec"); with_sources(): what the
// spec leaves to its reference. kernels_cuda/user_type_writer.cpp writes what this reads.
#include "kernels_cuda/user_type.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "common/parse_number.hpp"
#include "common/toml_words.hpp"

#include "kernels_cuda/cpp_words.hpp"
#include "kernels_cuda/launch_plan.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/spec_expression.hpp"

namespace ak {

namespace {

/// Sizes are passed to the kernel as int.
constexpr int64_t kMaxDim = 2147483647;
/// Elements of one tensor at any declared shape: far past any GPU's memory, short of overflow.
constexpr int64_t kMaxNumel = int64_t(1) << 48;

bool is_identifier(const std::string& s) {
  static const std::regex id("[A-Za-z_][A-Za-z0-9_]{0,63}");
  return std::regex_match(s, id);
}

/// Words a tensor or dim cannot be named: they become the entry point's parameter names.
bool is_reserved(const std::string& s) {
  static const std::set<std::string> words{
      "T", "elem", "int", "long", "short", "char", "float", "double", "void", "bool", "const", "auto", "signed",
      "unsigned", "return", "if", "else", "for", "while", "do", "switch", "case", "default", "break", "continue",
      "struct", "class", "union", "enum", "template", "typename", "namespace", "using", "static", "extern",
      "inline", "volatile", "register", "sizeof", "this", "new", "delete", "true", "false", "nullptr", "goto",
      "operator", "public", "private", "protected", "virtual", "friend", "typedef", "restrict", "__restrict__",
      "half", "__half", "__nv_bfloat16", "blockIdx", "threadIdx", "blockDim", "gridDim", "warpSize", "asm"};
  return words.count(s) > 0 || is_cpp_word(s) || s.rfind("ak_", 0) == 0;
}

/// Collects every problem of one spec, each as "file:line: key ...: expected ...".
class Checker {
 public:
  Checker(std::string file) : file_(std::move(file)) {}
  std::vector<std::string> errors;

  std::string at(const toml::node& n) const { return file_ + ":" + std::to_string(n.source().begin.line); }
  void fail(const toml::node& n, const std::string& key, const std::string& what) { errors.push_back(at(n) + ": " + key + " " + what); }
  void fail_file(const std::string& what) { errors.push_back(file_ + ": " + what); }

  /// Reports the keys of `t` that are not in `known`.
  void unknown_keys(const toml::table& t, const std::string& where, const std::set<std::string>& known) {
    for (auto&& [k, v] : t)
      if (!known.count(std::string(k.str()))) {
        std::string list;
        for (auto& name : known) list += (list.empty() ? "" : ", ") + name;
        errors.push_back(at(v) + ": unknown key '" + std::string(k.str()) + "' in " + where + " (known keys: " + list + ")");
      }
  }

  std::optional<std::string> string(const toml::table& t, const std::string& key, const std::string& qualified,
                                    bool required, const std::string& expected) {
    const toml::node* n = t.get(key);
    if (!n) {
      if (required) errors.push_back(at(t) + ": " + qualified + " is missing: expected " + expected);
      return std::nullopt;
    }
    auto v = n->value<std::string>();
    if (!v) fail(*n, qualified, "is " + toml_value_kind(*n) + ": expected " + expected);
    return v;
  }

  /// One of `allowed`, or nothing when the key is absent.
  std::optional<std::string> choice(const toml::table& t, const std::string& key, const std::string& qualified,
                                    bool required, const std::vector<std::string>& allowed) {
    std::string list;
    for (auto& a : allowed) list += (list.empty() ? "" : " | ") + ("\"" + a + "\"");
    auto v = string(t, key, qualified, required, "one of " + list);
    if (v && std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
      fail(*t.get(key), qualified, "= \"" + *v + "\": expected one of " + list);
      return std::nullopt;
    }
    return v;
  }

  /// A shape: one positive integer per dim.
  std::optional<Shape> shape(const toml::node& n, const std::string& key, size_t dims) {
    const toml::array* a = n.as_array();
    const std::string expected = "an array of " + std::to_string(dims) + " positive integers (one per dim, in dims order)";
    if (!a) return fail(n, key, "is " + toml_value_kind(n) + ": expected " + expected), std::nullopt;
    if (a->size() != dims)
      return fail(n, key, "has " + std::to_string(a->size()) + " values: expected " + expected), std::nullopt;
    Shape s;
    for (const toml::node& e : *a) {
      auto v = e.value_exact<int64_t>();
      if (!v || *v < 1 || *v > kMaxDim)
        return fail(n, key, "has " + (v ? std::to_string(*v) : toml_value_kind(e)) + ": expected " + expected + " of at most " +
                                std::to_string(kMaxDim)),
               std::nullopt;
      s.push_back(*v);
    }
    return s;
  }

  /// A non-empty array of shapes.
  std::vector<Shape> shapes(const toml::node& n, const std::string& key, size_t dims) {
    const toml::array* a = n.as_array();
    std::vector<Shape> out;
    if (!a || a->empty() || !(*a)[0].is_array()) {
      fail(n, key, "is " + (a && a->empty() ? std::string("empty") : toml_value_kind(n) + " of scalars") +
                       ": expected an array of shapes, e.g. [[64, 4096], [33, 1531]]");
      return out;
    }
    for (size_t i = 0; i < a->size(); ++i)
      if (auto s = shape((*a)[i], key + "[" + std::to_string(i) + "]", dims)) out.push_back(*s);
    return out;
  }

 private:
  std::string file_;
};

void read_dims(const toml::table& root, Checker& c, UserTypeSpec& s) {
  const toml::node* n = root.get("dims");
  if (!n) return c.errors.push_back(c.at(root) + ": dims is missing: expected the module's size globals in order, e.g. [\"batch_size\", \"dim\"]");
  const toml::array* a = n->as_array();
  if (!a || a->empty()) return c.fail(*n, "dims", "is " + toml_value_kind(*n) + ": expected a non-empty array of names");
  for (const toml::node& e : *a) {
    auto v = e.value<std::string>();
    if (!v || !is_identifier(*v) || is_reserved(*v))
      return c.fail(*n, "dims", "has " + (v ? "\"" + *v + "\"" : toml_value_kind(e)) +
                                   ": expected names of the module's globals (letters, digits, '_'; not a C++ word, not elem, not ak_*)");
    if (std::count(s.dims.begin(), s.dims.end(), *v)) return c.fail(*n, "dims", "names \"" + *v + "\" twice: expected distinct names");
    s.dims.push_back(*v);
  }
}

void read_shapes(const toml::table& root, Checker& c, UserTypeSpec& s) {
  const size_t d = s.dims.size();
  if (const toml::node* n = root.get("bench"))
    if (auto v = c.shape(*n, "bench", d)) s.bench = *v;
  if (const toml::node* n = root.get("smoke")) {
    if (auto v = c.shape(*n, "smoke", d)) s.smoke = *v;
  } else {
    c.errors.push_back(c.at(root) + ": smoke is missing: expected the shape of stage 1, one value per dim");
  }
  for (auto [key, out] : {std::pair{"sweep", &s.sweep}, std::pair{"edge", &s.edge}}) {
    if (const toml::node* n = root.get(key)) *out = c.shapes(*n, key, d);
    else c.errors.push_back(c.at(root) + ": " + key + " is missing: expected an array of shapes (stage " +
                            (std::string(key) == "sweep" ? "2" : "5") + ")");
  }
  for (auto [key, out] : {std::pair{"stability", &s.stability}, std::pair{"determinism", &s.determinism}}) {
    if (const toml::node* n = root.get(key)) {
      if (auto v = c.shape(*n, key, d)) *out = *v;
    } else if (!s.sweep.empty()) {
      *out = s.sweep[0];
    }
  }
}

/// A size: an integer, a dim's name, or an integer expression over the dims and the integer
/// [fixed] globals (read before the tensors).
std::optional<SizeTerm> size_term(const toml::node& n, const std::string& key, const UserTypeSpec& s, Checker& c, bool positive) {
  if (auto v = n.value_exact<int64_t>()) {
    if (positive && *v < 1) return c.fail(n, key, "has " + std::to_string(*v) + ": expected a dim's name or a positive integer"), std::nullopt;
    return SizeTerm{"", *v, nullptr};
  }
  if (auto v = n.value<std::string>()) {
    if (std::count(s.dims.begin(), s.dims.end(), *v)) return SizeTerm{*v, 0, nullptr};
    std::string known;
    for (auto& d : s.dims) known += (known.empty() ? "" : ", ") + d;
    bool integer_global = false;
    for (auto& [name, text] : s.fixed)
      if (parse_integer(text)) known += ", " + name, integer_global = integer_global || name == *v;
    if (is_identifier(*v) && !integer_global) {
      std::string dims;
      for (auto& d : s.dims) dims += (dims.empty() ? "" : ", ") + d;
      return c.fail(n, key, "names \"" + *v + "\", which is not a dim: expected one of " + dims +
                                " or an integer (or an integer expression of " + known + ")"),
             std::nullopt;
    }
    auto e = SpecExpression::parse(*v);
    if (!e) return c.fail(n, key, "= \"" + *v + "\": " + e.error().message + " (expected a dim, an integer or an integer expression of " + known + ")"), std::nullopt;
    const auto values = plan_values(s, Shape(s.dims.size(), 1));
    for (const std::string& name : e->names())
      if (!values.count(name))
        return c.fail(n, key, "= \"" + *v + "\" reads '" + name + "', which is no dim nor integer [fixed] global: expected names among " + known),
               std::nullopt;
    return SizeTerm{"", 0, std::make_shared<const SpecExpression>(std::move(*e))};
  }
  return c.fail(n, key, "is " + toml_value_kind(n) + ": expected a dim's name, an integer or an integer expression"), std::nullopt;
}

std::string number_text(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

/// A float input's low or high: a finite number, integer or not.
void read_float_bound(const toml::node& n, const std::string& key, Checker& c, std::optional<double>& out) {
  auto x = n.value<double>();
  if (!x || n.is_boolean() || !std::isfinite(*x))
    return c.fail(n, key, "is " + toml_value_kind(n) + ": expected a finite number, a bound of the values this float input takes");
  out = *x;
}

void read_tensor(const toml::table& t, size_t index, Checker& c, UserTypeSpec& s) {
  const std::string q = "tensor[" + std::to_string(index) + "]";
  c.unknown_keys(t, "[[tensor]]", {"name", "role", "shape", "type", "low", "high"});
  UserTensor out;
  if (auto v = c.string(t, "name", q + ".name", true, "the tensor's name in the module")) {
    if (!is_identifier(*v) || is_reserved(*v))
      c.fail(*t.get("name"), q + ".name", "= \"" + *v + "\": expected a C identifier that is not a C++ word, elem, T or ak_*");
    out.name = *v;
  }
  if (auto v = c.choice(t, "role", q + ".role", true, {"input", "parameter", "buffer", "output"}))
    out.role = *v == "input" ? TensorRole::Input : *v == "parameter" ? TensorRole::Parameter
               : *v == "buffer" ? TensorRole::Buffer : TensorRole::Output;
  if (auto v = c.choice(t, "type", q + ".type", true, {"float", "int64"})) out.int64 = *v == "int64";
  if (const toml::node* n = t.get("shape")) {
    const toml::array* a = n->as_array();
    if (!a) c.fail(*n, q + ".shape", "is " + toml_value_kind(*n) + ": expected an array of sizes (dims' names, positive integers, integer expressions; [] for a scalar)");
    else
      for (const toml::node& e : *a)
        if (auto term = size_term(e, q + ".shape", s, c, true)) out.shape.push_back(*term);
  } else {
    c.errors.push_back(c.at(t) + ": " + q + ".shape is missing: expected an array of dims' names and positive integers");
  }
  const bool drawn_int = out.int64 && out.role == TensorRole::Input;
  const bool float_input = !out.int64 && out.role == TensorRole::Input;
  for (auto [key, bound] : {std::pair{"low", &out.low}, std::pair{"high", &out.high}}) {
    const toml::node* n = t.get(key);
    if (n && float_input) read_float_bound(*n, q + "." + key, c, *key == 'l' ? out.least : out.most);
    else if (n && !drawn_int)
      c.fail(*n, q + "." + key, "is set on a tensor that is not an input: int64 inputs are drawn in [low, high), float "
                                "inputs may declare the range [low, high] their values lie in");
    else if (n) *bound = size_term(*n, q + "." + key, s, c, false);
    else if (drawn_int) c.errors.push_back(c.at(t) + ": " + q + " (\"" + out.name + "\") is an int64 input without " + key +
                                           ": expected low and high, its values being drawn in [low, high) (integers or dims' names)");
  }
  if (out.least && out.most && !(*out.least < *out.most))
    c.fail(t, q, "(\"" + out.name + "\") declares low = " + number_text(*out.least) + " and high = " + number_text(*out.most) +
                     ": expected low < high");
  if (out.int64 && out.role == TensorRole::Parameter)
    c.fail(t, q, "is an int64 parameter: expected float (parameters are floating point)");
  s.tensors.push_back(std::move(out));
}

void read_tensors(const toml::table& root, Checker& c, UserTypeSpec& s) {
  const toml::node* n = root.get("tensor");
  const toml::array* a = n ? n->as_array() : nullptr;
  if (!a || !a->is_array_of_tables() || a->empty())
    return c.errors.push_back((n ? c.at(*n) : c.at(root)) + ": tensor: expected [[tensor]] tables, one per argument tensor");
  for (size_t i = 0; i < a->size(); ++i) read_tensor(*(*a)[i].as_table(), i, c, s);
  std::set<std::string> names(s.dims.begin(), s.dims.end());
  int last_role = 0;
  bool order_ok = true, has_output = false;
  for (auto& t : s.tensors) {
    if (!t.name.empty() && !names.insert(t.name).second)
      c.fail_file("tensor \"" + t.name + "\" is named twice (or like a dim): expected distinct names, they become the kernel's parameters");
    order_ok = order_ok && int(t.role) >= last_role;
    last_role = int(t.role);
    has_output = has_output || t.role == TensorRole::Output;
  }
  if (!order_ok) c.fail_file("the [[tensor]] roles are out of order: expected inputs, then parameters, then buffers, then outputs");
  if (!has_output) c.fail_file("no [[tensor]] has role = \"output\": expected at least one output");
  for (auto& d : s.dims) {
    bool used = false;
    for (auto& t : s.tensors)
      for (auto& term : t.shape) used = used || term.dim == d || (term.expr && term.expr->names().count(d));
    if (!used) c.fail_file("dim \"" + d + "\" appears in no tensor's shape: expected every dim to size some tensor");
  }
}

void read_dtypes(const toml::table& root, Checker& c, UserTypeSpec& s) {
  const toml::node* n = root.get("dtypes");
  if (!n) {
    s.dtypes = {DType::F32};
    return;
  }
  const toml::array* a = n->as_array();
  const std::string expected = "a non-empty array of distinct \"fp32\", \"fp16\", \"bf16\"";
  if (!a || a->empty()) return c.fail(*n, "dtypes", "is " + toml_value_kind(*n) + ": expected " + expected);
  for (const toml::node& e : *a) {
    auto v = e.value<std::string>();
    std::optional<DType> d;
    if (v && (*v == "fp32" || *v == "fp16" || *v == "bf16")) d = parse_dtype(*v);
    if (!d || std::count(s.dtypes.begin(), s.dtypes.end(), *d))
      return c.fail(*n, "dtypes", "has " + (v ? "\"" + *v + "\"" : toml_value_kind(e)) + ": expected " + expected);
    s.dtypes.push_back(*d);
  }
}

void read_tolerance_and_fixed(const toml::table& root, Checker& c, UserTypeSpec& s) {
  if (const toml::node* n = root.get("tolerance")) {
    const toml::table* t = n->as_table();
    if (!t) return c.fail(*n, "tolerance", "is " + toml_value_kind(*n) + ": expected a table [tolerance] with fp32 = 1e-4 and the like");
    c.unknown_keys(*t, "[tolerance]", {"fp32", "fp16", "bf16"});
    for (auto&& [k, v] : *t) {
      auto d = parse_dtype(std::string(k.str()));
      auto x = v.value<double>();
      if (!x || v.is_boolean() || !(*x > 0 && *x < 1))
        c.fail(v, "tolerance." + std::string(k.str()), "is not a number in (0, 1): expected atol = rtol for that dtype, e.g. 1e-4");
      else if (d) s.tolerance[*d] = *x;
    }
  }
  if (const toml::node* n = root.get("fixed")) {
    const toml::table* t = n->as_table();
    if (!t) return c.fail(*n, "fixed", "is " + toml_value_kind(*n) + ": expected a table [fixed] of the module's other globals");
    for (auto&& [k, v] : *t) {
      const std::string name(k.str());
      if (!is_identifier(name) || std::count(s.dims.begin(), s.dims.end(), name))
        c.fail(v, "fixed." + name, "is not a global that is not a dim: expected a Python name other than the dims'");
      else if (!v.is_integer() && !v.is_floating_point() && !v.is_boolean() && !v.is_string())
        c.fail(v, "fixed." + name, "is " + toml_value_kind(v) + ": expected an integer, a number, a boolean or a string");
      else {
        std::ostringstream o;
        v.visit([&](auto&& x) {
          if constexpr (toml::is_string<decltype(x)>) o << nlohmann::json(x.get()).dump();  // quoted as Python reads it
          else if constexpr (toml::is_boolean<decltype(x)>) o << (x.get() ? "True" : "False");
          else if constexpr (toml::is_number<decltype(x)>) o << x;
        });
        s.fixed.emplace_back(name, o.str());
      }
    }
  }
}

/// bytes and flops: parseable, reading only the dims (and elem, for bytes).
void check_expression(const toml::table& root, const char* key, const std::string& text, bool elem_allowed, Checker& c,
                      const UserTypeSpec& s) {
  if (std::string(key) == "bytes" && text == "tensors") return;
  const toml::node* n = root.get(key);
  auto e = SpecExpression::parse(text);
  if (!e) return c.fail(*n, key, "= \"" + text + "\": " + e.error().message);
  for (const std::string& name : e->names()) {
    const bool known = std::count(s.dims.begin(), s.dims.end(), name) || (elem_allowed && name == "elem");
    if (!known)
      c.fail(*n, key, "= \"" + text + "\" reads '" + name + "': expected only the dims" +
                          std::string(elem_allowed ? " and elem (the bytes of the dtype under test)" : ""));
  }
}

/// What must hold at every shape the spec declares: bounds that leave values to draw, tensors that fit.
void check_shapes(Checker& c, const UserTypeSpec& s) {
  std::vector<Shape> all{s.smoke, s.stability, s.determinism};
  if (!s.bench.empty()) all.push_back(s.bench);
  all.insert(all.end(), s.sweep.begin(), s.sweep.end());
  all.insert(all.end(), s.edge.begin(), s.edge.end());
  for (const Shape& shape : all) {
    if (shape.size() != s.dims.size()) continue;
    if (std::string why = s.shape_problem(shape); !why.empty())
      return c.fail_file("at shape " + shape_str(shape) + ": " + why + " (every size must be positive at every declared shape)");
    for (const UserTensor& t : s.tensors) {
      double n = 1;
      for (const SizeTerm& term : t.shape) n *= double(s.value_of(term, shape));
      if (n > double(kMaxNumel))
        return c.fail_file("tensor \"" + t.name + "\" at shape " + shape_str(shape) + " has " + std::to_string(int64_t(n)) +
                           " elements: expected at most 2^48");
      if (t.low && t.high && s.value_of(*t.low, shape) >= s.value_of(*t.high, shape))
        return c.fail_file("tensor \"" + t.name + "\" at shape " + shape_str(shape) + ": low (" + t.low->text() + " = " +
                           std::to_string(s.value_of(*t.low, shape)) + ") is not below high (" + t.high->text() + " = " +
                           std::to_string(s.value_of(*t.high, shape)) + "): expected low < high at every shape");
    }
    if (s.grid == GridRule::Rows) {
      for (const UserTensor& t : s.tensors)
        if (t.role != TensorRole::Output && (t.shape.empty() || s.value_of(t.shape.back(), shape) < 1)) {
          c.fail_file("grid = \"rows\" needs a first input with a last dimension: \"" + t.name + "\" has none");
          return;
        } else if (t.role != TensorRole::Output) break;
    }
  }
}

void check_grid_operands(Checker& c, const UserTypeSpec& s) {
  const bool has_input = std::any_of(s.tensors.begin(), s.tensors.end(), [](auto& t) { return t.role != TensorRole::Output; });
  if (s.grid == GridRule::Rows && !has_input)
    c.fail_file("grid = \"rows\" counts the rows of the first input, and there is none: expected an input tensor, or another grid");
  for (auto& t : s.tensors)
    if (t.role == TensorRole::Output) {
      if (s.grid == GridRule::Tiles && t.shape.empty())
        c.fail_file("grid = \"tiles\" tiles the first output as a matrix, and \"" + t.name + "\" is a scalar: expected another grid");
      break;
    }
}

}  // namespace

Result<UserTypeSpec> parse_user_type(const std::string& text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& err) {
    return error(path + ":" + std::to_string(err.source().begin.line) + ": not valid TOML: " + std::string(err.description()));
  }
  UserTypeSpec s;
  s.path = path;
  s.text = text;
  Checker c(path);
  c.unknown_keys(root, "the spec", {"name", "summary", "reference", "kind", "grid", "dtypes", "starter", "metric", "bytes", "flops",
                                    "dims", "bench", "smoke", "sweep", "stability", "determinism", "edge", "fixed", "tolerance", "tensor"});
  if (auto v = c.string(root, "name", "name", true, "the type's name, [a-z][a-z0-9_]{0,47}")) {
    static const std::regex re("[a-z][a-z0-9_]{0,47}");
    if (!std::regex_match(*v, re))
      c.fail(*root.get("name"), "name", "= \"" + *v + "\": expected [a-z][a-z0-9_]{0,47} (it names files, a git path and the entry point)");
    else if (find_builtin_spec(*v))
      c.fail(*root.get("name"), "name", "= \"" + *v + "\" is a built-in kernel type: expected another name");
    s.name = *v;
  }
  s.summary = c.string(root, "summary", "summary", false, "one line: what the module computes").value_or("");
  s.reference = c.string(root, "reference", "reference", true, "the PyTorch reference's path, relative to this file").value_or("");
  s.starter = c.string(root, "starter", "starter", false, "a kernel file's path, relative to this file").value_or("");
  s.kind = c.choice(root, "kind", "kind", true, user_type_kinds()).value_or("");
  if (auto g = c.choice(root, "grid", "grid", true, {"elements", "rows", "tiles"}))
    s.grid = *g == "rows" ? GridRule::Rows : *g == "tiles" ? GridRule::Tiles : GridRule::Elements;
  read_dtypes(root, c, s);
  auto metric = c.choice(root, "metric", "metric", false, {"GBps", "TFLOPS"});
  s.metric = metric ? (*metric == "TFLOPS" ? Metric::TFLOPS : Metric::GBps) : s.kind == "gemm_epilogue" ? Metric::TFLOPS : Metric::GBps;
  s.bytes = c.string(root, "bytes", "bytes", false, "\"tensors\" or an expression").value_or("tensors");
  s.flops = c.string(root, "flops", "flops", false, "an expression in the dims").value_or("0");
  read_dims(root, c, s);
  read_tolerance_and_fixed(root, c, s);   // before the tensors: their sizes may read the integer globals
  if (!s.dims.empty()) {
    read_shapes(root, c, s);
    read_tensors(root, c, s);
    check_expression(root, "bytes", s.bytes, true, c, s);
    check_expression(root, "flops", s.flops, false, c, s);
  }
  if (c.errors.empty()) check_grid_operands(c, s);
  if (c.errors.empty()) check_shapes(c, s);
  if (s.summary.empty() && !s.name.empty()) s.summary = s.name + ": the forward of the module in " + s.reference;
  if (!c.errors.empty()) {
    std::string all;
    for (auto& m : c.errors) all += (all.empty() ? "" : "\n") + m;
    return error(all);
  }
  return s;
}

namespace {

/// `name = 123` at the start of a line of the module: a size global as KernelBench writes them.
std::optional<int64_t> module_global(const std::string& source, const std::string& name) {
  const std::regex re("(^|\n)" + name + R"([ \t]*(:[ \t]*int[ \t]*)?=[ \t]*([0-9][0-9_]{0,18})[ \t]*(#[^\n]*)?(\r?\n|$))");
  std::smatch m;
  if (!std::regex_search(source, m, re)) return std::nullopt;
  std::string digits = m[3];
  digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
  return parse_integer(digits);   // nineteen digits may pass a long long: nullopt, refused as no size
}

}  // namespace

Status with_sources(UserTypeSpec& spec, std::string reference_source, std::string starter_source) {
  spec.reference_source = std::move(reference_source);
  spec.starter_source = std::move(starter_source);
  if (!spec.bench.empty()) return ok();
  for (const std::string& d : spec.dims) {
    auto v = module_global(spec.reference_source, d);
    if (!v || *v < 1 || *v > kMaxDim)
      return error(spec.path + ": bench is missing, and " + spec.reference + " sets no module-level `" + d +
                   " = <positive integer>`: expected bench = [...] (one value per dim) in the spec");
    spec.bench.push_back(*v);
  }
  return ok();
}

}  // namespace ak
