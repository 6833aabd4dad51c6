#include "kernels_cuda/user_type_writer.hpp"

#include <charconv>
#include <regex>

#include <nlohmann/json.hpp>

#include "common/text_escape.hpp"
#include "kernels_cuda/spec_expression.hpp"

namespace ak {
namespace {

/// The shortest text that reads back as the same double, always a TOML float (never "2": an
/// integer would read back as one).
std::string float_text(double x) {
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, x).ptr;
  std::string text(buffer, end);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";   // "n": inf and nan
  return text;
}

std::string size_text(const SizeTerm& term) {
  if (term.expr) return toml_string(term.expr->text());
  return term.dim.empty() ? std::to_string(term.value) : toml_string(term.dim);
}

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string shapes_text(const std::vector<Shape>& shapes) {
  std::string out = "[";
  for (size_t i = 0; i < shapes.size(); ++i) out += (i ? ", " : "") + shape_text(shapes[i]);
  return out + "]";
}

std::string names_text(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + toml_string(names[i]);
  return out + "]";
}

/// A TOML integer or float as toml++ writes one, and nothing after it.
bool toml_number(const std::string& text) {
  static const std::regex number(R"([+-]?(inf|nan|(0|[1-9](_?[0-9])*)(\.[0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?))");
  return std::regex_match(text, number);
}

/// A key as TOML reads it back: bare where it can be, else quoted.
std::string key_text(const std::string& key) {
  static const std::regex bare("[A-Za-z0-9_-]+");
  return std::regex_match(key, bare) ? key : toml_string(key);
}

std::string fixed_value(const std::string& text) {
  if (text == "True" || text == "False") return text == "True" ? "true" : "false";
  if (toml_number(text)) return text;
  if (!text.empty() && text[0] == '"') {
    const nlohmann::json quoted = nlohmann::json::parse(text, nullptr, false);
    if (quoted.is_string()) return toml_string(quoted.get<std::string>());
  }
  return toml_string(text);
}

class SpecText {
 public:
  explicit SpecText(const UserTypeComments& comments) : comments_(comments) {}

  /// A top-level key, with the comments given for it.
  void key(const std::string& key, const std::string& value) {
    text_ += key + " = " + value;
    if (auto it = comments_.beside.find(key); it != comments_.beside.end()) text_ += "   # " + toml_comment(it->second);
    text_ += "\n";
    lines_below(key);
  }
  /// A key of a table: comments name top-level keys only.
  void entry(const std::string& key, const std::string& value) { text_ += key + " = " + value + "\n"; }
  void lines_below(const std::string& key) {
    if (auto it = comments_.below.find(key); it != comments_.below.end())
      for (const std::string& line : it->second) comment(line);
  }
  void comment(const std::string& line) { text_ += "# " + toml_comment(line) + "\n"; }
  void raw(const std::string& text) { text_ += text; }
  const std::string& text() const { return text_; }

 private:
  const UserTypeComments& comments_;
  std::string text_;
};

void write_tensor(SpecText& out, const UserTensor& t) {
  out.raw("\n[[tensor]]\n");
  out.entry("name", toml_string(t.name));
  out.entry("role", toml_string(tensor_role_name(t.role)));
  std::string shape = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + size_text(t.shape[i]);
  out.entry("shape", shape + "]");   // [] is a scalar (one element)
  out.entry("type", t.int64 ? "\"int64\"" : "\"float\"");
  // An int64 input's bounds are sizes; a float input's are the range its values lie in.
  if (t.low) out.entry("low", size_text(*t.low));
  else if (t.least) out.entry("low", float_text(*t.least));
  if (t.high) out.entry("high", size_text(*t.high));
  else if (t.most) out.entry("high", float_text(*t.most));
}

}  // namespace

std::string user_type_toml(const UserTypeSpec& s, const UserTypeComments& comments) {
  SpecText out(comments);
  for (const std::string& line : comments.header) out.comment(line);
  out.key("name", toml_string(s.name));
  if (!s.summary.empty()) out.key("summary", toml_string(s.summary));
  out.key("reference", toml_string(s.reference));
  out.key("kind", toml_string(s.kind));
  out.key("grid", toml_string(grid_rule_name(s.grid)));
  std::vector<std::string> dtypes;
  for (DType d : s.dtypes) dtypes.push_back(dtype_name(d));
  out.key("dtypes", names_text(dtypes));
  if (!s.starter.empty()) out.key("starter", toml_string(s.starter));
  out.key("metric", s.metric == Metric::TFLOPS ? "\"TFLOPS\"" : "\"GBps\"");
  if (s.flops != "0") out.key("flops", toml_string(s.flops));
  out.key("bytes", toml_string(s.bytes));
  out.raw("\n");
  out.key("dims", names_text(s.dims));
  if (!s.bench.empty()) out.key("bench", shape_text(s.bench));
  out.key("smoke", shape_text(s.smoke));
  out.key("sweep", shapes_text(s.sweep));
  out.key("stability", shape_text(s.stability));
  out.key("determinism", shape_text(s.determinism));
  out.key("edge", shapes_text(s.edge));
  if (!s.tolerance.empty()) {
    out.raw("\n[tolerance]\n");
    for (auto& [dtype, atol] : s.tolerance) out.entry(dtype_name(dtype), float_text(atol));
  }
  if (!s.fixed.empty() || comments.below.count("fixed")) {
    out.raw("\n[fixed]\n");
    for (auto& [name, value] : s.fixed) out.entry(key_text(name), fixed_value(value));
    out.lines_below("fixed");
  }
  for (const UserTensor& t : s.tensors) write_tensor(out, t);
  return out.text();
}

}  // namespace ak
