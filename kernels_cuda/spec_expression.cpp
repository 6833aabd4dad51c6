#include "kernels_cuda/spec_expression.hpp"

#include <cctype>

namespace ak {

struct SpecExpression::Node {
  char op = 0;  ///< 0: a number; 'n': a name; '~': minus of `left`; else a binary operator
  double number = 0;
  std::string name;
  std::shared_ptr<const Node> left, right;
};

namespace {

using NodePtr = std::shared_ptr<const SpecExpression::Node>;

/// Recursive descent over expr := term (('+'|'-') term)*, term := factor (('*'|'/') factor)*,
/// factor := number | name | '-' factor | '(' expr ')'. Depth is capped so that a hostile
/// nesting cannot exhaust the stack.
class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  Result<NodePtr> whole() {
    auto e = expr(0);
    if (!e) return e;
    skip();
    if (i_ < t_.size()) return fail("an operator (+ - * /) or the end");
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
    for (skip(); i_ < t_.size() && (t_[i_] == '*' || t_[i_] == '/'); skip()) {
      const char op = t_[i_++];
      auto r = factor(depth);
      if (!r) return r;
      acc = binary(op, acc, *r);
    }
    return acc;
  }

  Result<NodePtr> factor(int depth) {
    if (depth > kMaxDepth) return fail("fewer nested parentheses or signs (at most " + std::to_string(kMaxDepth) + ")");
    skip();
    if (i_ >= t_.size()) return fail("a number, a name, '-' or '('");
    const char c = t_[i_];
    auto n = std::make_shared<SpecExpression::Node>();
    if (std::isdigit((unsigned char)c)) {
      size_t start = i_;
      while (i_ < t_.size() && std::isdigit((unsigned char)t_[i_])) ++i_;
      if (i_ - start > 18) { i_ = start; return fail("an integer of at most 18 digits"); }
      n->number = double(std::stoll(t_.substr(start, i_ - start)));
      return NodePtr(n);
    }
    if (std::isalpha((unsigned char)c) || c == '_') {
      size_t start = i_;
      while (i_ < t_.size() && (std::isalnum((unsigned char)t_[i_]) || t_[i_] == '_')) ++i_;
      n->op = 'n';
      n->name = t_.substr(start, i_ - start);
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

Result<double> eval(const SpecExpression::Node& n, const std::map<std::string, double>& values, const std::string& text) {
  switch (n.op) {
    case 0: return n.number;
    case 'n': {
      auto it = values.find(n.name);
      if (it == values.end()) return error("\"" + text + "\": '" + n.name + "' has no value here");
      return it->second;
    }
    case '~': {
      auto v = eval(*n.left, values, text);
      if (!v) return v;
      return -*v;
    }
    default: break;
  }
  auto l = eval(*n.left, values, text);
  if (!l) return l;
  auto r = eval(*n.right, values, text);
  if (!r) return r;
  switch (n.op) {
    case '+': return *l + *r;
    case '-': return *l - *r;
    case '*': return *l * *r;
    default:
      if (*r == 0) return error("\"" + text + "\": division by zero");
      return *l / *r;
  }
}

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
  return eval(*root_, values, text_);
}

}  // namespace ak
