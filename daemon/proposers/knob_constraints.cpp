#include "daemon/proposers/knob_constraints.hpp"

#include <cctype>
#include <map>
#include <utility>
#include <vector>
#include <sstream>

namespace ak {
namespace {

/// A recursive-descent evaluator over one expression; nullopt for anything it cannot read.
class Expr {
 public:
  Expr(const std::string& text, const std::map<std::string, long long>& names) : s_(text), names_(names) {}

  std::optional<long long> value() {
    auto v = ternary();
    skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  using V = std::optional<long long>;
  void skip() {
    while (i_ < s_.size() && std::isspace((unsigned char)s_[i_])) ++i_;
  }
  bool eat(const char* op) {
    skip();
    const size_t n = std::char_traits<char>::length(op);
    if (s_.compare(i_, n, op) != 0) return false;
    // "<" must not take the first half of "<<" or "<="; "&" is not "&&".
    if (n == 1 && i_ + 1 < s_.size() && std::string("<>=!&|").find(s_[i_ + 1]) != std::string::npos &&
        std::string("<>&|").find(op[0]) != std::string::npos)
      return false;
    i_ += n;
    return true;
  }
  V ternary() {
    V c = logical_or();
    if (!c || !eat("?")) return c;
    V a = ternary();
    if (!eat(":")) return std::nullopt;
    V b = ternary();
    if (!a || !b) return std::nullopt;
    return *c ? a : b;
  }
  V logical_or() {
    V a = logical_and();
    while (a && eat("||")) {
      V b = logical_and();
      if (!b) return std::nullopt;
      a = (*a || *b) ? 1 : 0;
    }
    return a;
  }
  V logical_and() {
    V a = comparison();
    while (a && eat("&&")) {
      V b = comparison();
      if (!b) return std::nullopt;
      a = (*a && *b) ? 1 : 0;
    }
    return a;
  }
  V comparison() {
    V a = shift();
    for (;;) {
      if (!a) return a;
      const char* ops[] = {"==", "!=", "<=", ">=", "<", ">"};
      const char* hit = nullptr;
      for (const char* op : ops)
        if (eat(op)) {
          hit = op;
          break;
        }
      if (!hit) return a;
      V b = shift();
      if (!b) return std::nullopt;
      const std::string o = hit;
      a = o == "==" ? *a == *b : o == "!=" ? *a != *b : o == "<=" ? *a <= *b : o == ">=" ? *a >= *b : o == "<" ? *a < *b : *a > *b;
    }
  }
  V shift() {
    V a = sum();
    for (;;) {
      if (!a) return a;
      if (eat("<<")) {
        V b = sum();
        if (!b || *b < 0 || *b > 62) return std::nullopt;
        a = *a << *b;
      } else if (eat(">>")) {
        V b = sum();
        if (!b || *b < 0 || *b > 62) return std::nullopt;
        a = *a >> *b;
      } else {
        return a;
      }
    }
  }
  V sum() {
    V a = product();
    for (;;) {
      if (!a) return a;
      if (eat("+")) {
        V b = product();
        if (!b) return std::nullopt;
        a = *a + *b;
      } else if (eat("-")) {
        V b = product();
        if (!b) return std::nullopt;
        a = *a - *b;
      } else {
        return a;
      }
    }
  }
  V product() {
    V a = unary();
    for (;;) {
      if (!a) return a;
      char op = 0;
      if (eat("*")) op = '*';
      else if (eat("/")) op = '/';
      else if (eat("%")) op = '%';
      else return a;
      V b = unary();
      if (!b) return std::nullopt;
      if (op != '*' && *b == 0) {
        divided_by_zero = true;
        return std::nullopt;
      }
      a = op == '*' ? *a * *b : op == '/' ? *a / *b : *a % *b;
    }
  }
  V unary() {
    if (eat("!")) {
      V a = unary();
      return a ? V(!*a) : a;
    }
    if (eat("-")) {
      V a = unary();
      return a ? V(-*a) : a;
    }
    if (eat("(")) {
      V a = ternary();
      return eat(")") ? a : std::nullopt;
    }
    skip();
    if (i_ < s_.size() && std::isdigit((unsigned char)s_[i_])) {
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(s_.substr(i_), &used, 0);
      } catch (const std::exception&) {   // out of range: leave it to the compiler
        return std::nullopt;
      }
      i_ += used;
      while (i_ < s_.size() && std::string("uUlL").find(s_[i_]) != std::string::npos) ++i_;
      return v;
    }
    size_t start = i_;
    while (i_ < s_.size() && (std::isalnum((unsigned char)s_[i_]) || s_[i_] == '_')) ++i_;
    auto it = names_.find(s_.substr(start, i_ - start));
    if (start == i_ || it == names_.end()) return std::nullopt;
    return it->second;
  }

  const std::string& s_;
  const std::map<std::string, long long>& names_;
  size_t i_ = 0;

 public:
  bool divided_by_zero = false;
};

}  // namespace

namespace {

std::string trim(std::string t) {
  const size_t a = t.find_first_not_of(" \t\r");
  const size_t b = t.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : t.substr(a, b - a + 1);
}

/// "constexpr int kName = expr;" -> {kName, expr}; integer types only, one line.
std::optional<std::pair<std::string, std::string>> constant_line(std::string line) {
  if (size_t c = line.find("//"); c != std::string::npos) line.resize(c);
  line = trim(line);
  if (line.rfind("static ", 0) == 0) line = trim(line.substr(7));
  if (line.rfind("constexpr ", 0) != 0 || line.empty() || line.back() != ';') return std::nullopt;
  const size_t eq = line.find('=');
  if (eq == std::string::npos || line[eq + 1] == '=') return std::nullopt;
  std::istringstream words(line.substr(10, eq - 10));
  std::vector<std::string> w;
  for (std::string x; words >> x;) w.push_back(x);
  if (w.size() < 2) return std::nullopt;
  for (size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i] != "int" && w[i] != "long" && w[i] != "unsigned" && w[i] != "size_t") return std::nullopt;
  return std::make_pair(w.back(), line.substr(eq + 1, line.size() - eq - 2));
}

/// static_assert(expr, "why"); -> {expr, why}
std::optional<std::pair<std::string, std::string>> assert_line(const std::string& raw) {
  const std::string line = trim(raw);
  if (line.rfind("static_assert(", 0) != 0) return std::nullopt;
  const size_t q2 = line.rfind('"');
  if (q2 == std::string::npos || q2 == 0) return std::nullopt;
  const size_t q1 = line.rfind('"', q2 - 1);
  if (q1 == std::string::npos) return std::nullopt;
  const size_t comma = line.rfind(',', q1);
  if (comma == std::string::npos || comma < 14) return std::nullopt;
  return std::make_pair(line.substr(14, comma - 14), line.substr(q1 + 1, q2 - q1 - 1));
}

}  // namespace

std::optional<std::string> broken_assert(const std::string& source, const Knobs& knobs) {
  std::map<std::string, long long> names(knobs.begin(), knobs.end());
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    if (auto c = constant_line(line)) {
      Expr e(c->second, names);
      if (auto v = e.value()) names[c->first] = *v;
      else if (e.divided_by_zero) return "a constant divides by zero (" + c->first + ")";
    } else if (auto a = assert_line(line)) {
      Expr e(a->first, names);
      auto v = e.value();
      if (e.divided_by_zero) return a->second + " (a division by zero)";
      if (v && *v == 0) return a->second;
    }
  }
  return std::nullopt;
}

}  // namespace ak
