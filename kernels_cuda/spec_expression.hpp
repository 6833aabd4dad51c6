#pragma once
/// The arithmetic a user type's spec and a kernel file's launch plan may write: integers, names,
/// + - * / %, unary minus, parentheses and the functions ceil_div(a, b), min(a, b), max(a, b);
/// nothing else, so a spec or a plan can state a formula without any code of its own being run.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/result.hpp"

namespace ak {

/// A parsed expression, evaluated in doubles (bytes and flops outgrow 64-bit products of sizes)
/// or in 64-bit integers (sizes, grids, element counts: exact, every overflow an error).
class SpecExpression {
 public:
  /// Parses `text`; an error says what was expected at which character (1-based).
  static Result<SpecExpression> parse(const std::string& text);
  /// The names it reads, for checking them against the dims a spec declares (not the functions).
  const std::set<std::string>& names() const { return names_; }
  /// Its value with `values` for the names; an error names one that has none, or a division by 0.
  /// `/` divides exactly; `%` and ceil_div are those of floor division.
  Result<double> evaluate(const std::map<std::string, double>& values) const;
  /// Its value in int64: `/` and `%` are floor division and modulo (-7 / 2 = -4, -7 % 2 = 1),
  /// ceil_div(a, b) = -((-a) / b). A division or modulo by 0 and every overflow are errors
  /// naming the expression and the operation.
  Result<int64_t> evaluate_int(const std::map<std::string, int64_t>& values) const;
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::set<std::string> names_;
  std::shared_ptr<const Node> root_;
};

}  // namespace ak
