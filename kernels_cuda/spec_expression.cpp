#include "kernels_cuda/spec_expression.hpp"

#include <cctype>
#include <cmath>
#include <limits>

namespace ak {

struct SpecExpression::Node {
  /// 0: a number; 'n': a name; '~': minus of `left`; + - * / %: a binary operator;
  /// 'c', '<', '>': ceil_div, min, max of `left` and `right`
  char op = 0;
  int64_t number = 0;
  std::string name;
  std::shared_ptr<const Node> left, right;
};

namespace {

using NodePtr = std::shared_ptr<const SpecExpression::Node>;

/// The functions an expression may call, each of two arguments, with its node's operator.
char function_op(const std::string& name) {
  if (name == "ceil_div") return 'c';
  if (name == "min") return '<';
  if (name == "max") return '>';
  return 0;
}

/// Recursive descent over expr := term (('+'|'-') term)*, term := factor (('*'|'/'|'%') factor)*,
/// factor := number | name | function '(' expr ',' expr ')' | '-' factor | '(' expr ')'. Depth is
/// capped so that a hostile nesting cannot exhaust the stack.
class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  Result<NodePtr> whole() {
    auto e = expr(0);
    if (!e) return e;
    skip();
    if (i_ < t_.size()) return fail("an operator (+ - * / %) or the end");
    return e;
  }
  std::set<std::string> names;

 private:
  static constexpr int kMaxDepth = 64;

  void skip() {
    while (i_ < t_.size() && std::isspace((unsigned char)t_[i_])) ++i_;
  }
  Error fail(const std::string& expected) const {
    std::string got = "the end";
    if (i_ < t_.size()) got = std::string("'") + t_[i_] + "'";
    return error("at character " + std::to_string(i_ + 1) + " of \"" + t_ + "\": found " + got + ", expected " + expected);
  }
  static NodePtr binary(char op, NodePtr l, NodePtr r) {
    auto n = std::make_shared<SpecExpression::Node>();
    n->op = op, n->left = std::move(l), n->right = std::move(r);
    return n;
  }

  Result<NodePtr> expr(int depth) {
    auto l = term(depth);
    if (!l) return l;
    NodePtr acc = *l;
    for (skip(); i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-'); skip()) {
      const char op = t_[i_++];
      auto r = term(depth);
      if (!r) return r;
      acc = binary(op, acc, *r);
    }
    return acc;
  }

  Result<NodePtr> term(int depth) {
    auto l = factor(depth);
    if (!l) return l;
    NodePtr acc = *l;
    for (skip(); i_ < t_.size() && (t_[i_] == '*' || t_[i_] == '/' || t_[i_] == '%'); skip()) {
      const char op = t_[i_++];
      auto r = factor(depth);
      if (!r) return r;
      acc = binary(op, acc, *r);
    }
    return acc;
  }

  /// name '(' expr ',' expr ')', the name already read; i_ at the '('.
  Result<NodePtr> call(const std::string& name, int depth) {
    const char op = function_op(name);
    if (!op) return fail("an operator (+ - * / %) or the end ('" + name + "' is not a function: the functions are ceil_div, min and max)");
    ++i_;
    auto a = expr(depth + 1);
    if (!a) return a;
    skip();
    if (i_ >= t_.size() || t_[i_] != ',') return fail("',' (" + name + " takes two arguments)");
    ++i_;
    auto b = expr(depth + 1);
    if (!b) return b;
    skip();
    if (i_ >= t_.size() || t_[i_] != ')') return fail("')' (" + name + " takes two arguments)");
    ++i_;
    return binary(op, *a, *b);
  }

  Result<NodePtr> factor(int depth) {
    if (depth > kMaxDepth) return fail("fewer nested parentheses, calls or signs (at most " + std::to_string(kMaxDepth) + ")");
    skip();
    if (i_ >= t_.size()) return fail("a number, a name, '-' or '('");
    const char c = t_[i_];
    auto n = std::make_shared<SpecExpression::Node>();
    if (std::isdigit((unsigned char)c)) {
      size_t start = i_;
      while (i_ < t_.size() && std::isdigit((unsigned char)t_[i_])) ++i_;
      if (i_ - start > 18) { i_ = start; return fail("an integer of at most 18 digits"); }
      n->number = std::stoll(t_.substr(start, i_ - start));
      return NodePtr(n);
    }
    if (std::isalpha((unsigned char)c) || c == '_') {
      size_t start = i_;
      while (i_ < t_.size() && (std::isalnum((unsigned char)t_[i_]) || t_[i_] == '_')) ++i_;
      const std::string name = t_.substr(start, i_ - start);
      skip();
      if (i_ < t_.size() && t_[i_] == '(') return call(name, depth);
      n->op = 'n';
      n->name = name;
      names.insert(n->name);
      return NodePtr(n);
    }
    if (c == '-') {
      ++i_;
      auto inner = factor(depth + 1);
      if (!inner) return inner;
      n->op = '~';
      n->left = *inner;
      return NodePtr(n);
    }
    if (c == '(') {
      ++i_;
      auto inner = expr(depth + 1);
      if (!inner) return inner;
      skip();
      if (i_ >= t_.size() || t_[i_] != ')') return fail("')'");
      ++i_;
      return inner;
    }
    return fail("a number, a name, '-' or '('");
  }

  const std::string& t_;
  size_t i_ = 0;
};

const char* op_text(char op) {
  switch (op) {
    case 'c': return "ceil_div";
    case '<': return "min";
    case '>': return "max";
    case '%': return "%";
    default: return "/";
  }
}

/// The value of a tree, in doubles or in int64: one walk, the arithmetic of each its own.
template <typename V, typename Arith>
Result<V> eval(const SpecExpression::Node& n, const std::map<std::string, V>& values, const Arith& arith) {
  switch (n.op) {
    case 0: return V(n.number);
    case 'n': {
      auto it = values.find(n.name);
      if (it == values.end()) return arith.fail("'" + n.name + "' has no value here");
      return it->second;
    }
    case '~': {
      auto v = eval(*n.left, values, arith);
      if (!v) return v;
      return arith.negate(*v);
    }
    default: break;
  }
  auto l = eval(*n.left, values, arith);
  if (!l) return l;
  auto r = eval(*n.right, values, arith);
  if (!r) return r;
  switch (n.op) {
    case '<': return std::min(*l, *r);
    case '>': return std::max(*l, *r);
    default: break;
  }
  return arith.binary(n.op, *l, *r);
}

struct DoubleArith {
  const std::string& text;
  Error fail(const std::string& why) const { return error("\"" + text + "\": " + why); }
  Result<double> negate(double v) const { return -v; }
  Result<double> binary(char op, double l, double r) const {
    switch (op) {
      case '+': return l + r;
      case '-': return l - r;
      case '*': return l * r;
      default: break;
    }
    if (r == 0) return fail(std::string("division by zero (") + op_text(op) + ")");
    if (op == '%') return l - r * std::floor(l / r);
    if (op == 'c') return std::ceil(l / r);
    return l / r;
  }
};

struct IntArith {
  const std::string& text;
  Error fail(const std::string& why) const { return error("\"" + text + "\": " + why); }
  Error overflow(int64_t l, const char* op, int64_t r) const {
    return fail(std::to_string(l) + " " + op + " " + std::to_string(r) + " overflows 64-bit integers");
  }
  Result<int64_t> negate(int64_t v) const {
    if (v == std::numeric_limits<int64_t>::min()) return fail("-(" + std::to_string(v) + ") overflows 64-bit integers");
    return -v;
  }
  Result<int64_t> binary(char op, int64_t l, int64_t r) const {
    int64_t out = 0;
    switch (op) {
      case '+': if (__builtin_add_overflow(l, r, &out)) return overflow(l, "+", r); return out;
      case '-': if (__builtin_sub_overflow(l, r, &out)) return overflow(l, "-", r); return out;
      case '*': if (__builtin_mul_overflow(l, r, &out)) return overflow(l, "*", r); return out;
      default: break;
    }
    if (r == 0) {
      const std::string call = op == 'c' ? "ceil_div(" + std::to_string(l) + ", 0)" : std::to_string(l) + " " + op_text(op) + " 0";
      return fail("division by zero: " + call);
    }
    if (l == std::numeric_limits<int64_t>::min() && r == -1) {
      if (op == '%') return int64_t(0);
      return fail(std::string(op == 'c' ? "ceil_div(" : "") + std::to_string(l) + (op == 'c' ? ", " : " / ") + "-1" +
                  (op == 'c' ? ")" : "") + " overflows 64-bit integers");
    }
    const int64_t q = l / r, rem = l % r;
    if (op == '%') return rem != 0 && ((rem < 0) != (r < 0)) ? rem + r : rem;
    if (rem == 0) return q;
    const bool exact_is_negative = (l < 0) != (r < 0);
    if (op == 'c') return exact_is_negative ? q : q + 1;
    return exact_is_negative ? q - 1 : q;
  }
};

}  // namespace

Result<SpecExpression> SpecExpression::parse(const std::string& text) {
  if (text.size() > 1000) return error("an expression of " + std::to_string(text.size()) + " characters: expected at most 1000");
  Parser p(text);
  auto root = p.whole();
  if (!root) return root.error();
  SpecExpression e;
  e.text_ = text;
  e.names_ = std::move(p.names);
  e.root_ = *root;
  return e;
}

Result<double> SpecExpression::evaluate(const std::map<std::string, double>& values) const {
  return eval(*root_, values, DoubleArith{text_});
}

Result<int64_t> SpecExpression::evaluate_int(const std::map<std::string, int64_t>& values) const {
  return eval(*root_, values, IntArith{text_});
}

}  // namespace ak
