#pragma once
/// The arithmetic a user type's spec may write for its bytes and flops: integers, names, + - * /,
/// unary minus and parentheses; nothing else, so a spec file can state a formula without any
/// code of its own being run.
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/result.hpp"

namespace ak {

/// A parsed expression, evaluated in doubles (bytes and flops outgrow 64-bit products of sizes).
class SpecExpression {
 public:
  /// Parses `text`; an error says what was expected at which character (1-based).
  static Result<SpecExpression> parse(const std::string& text);
  /// The names it reads, for checking them against the dims a spec declares.
  const std::set<std::string>& names() const { return names_; }
  /// Its value with `values` for the names; an error names one that has none, or a division by 0.
  Result<double> evaluate(const std::map<std::string, double>& values) const;
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::set<std::string> names_;
  std::shared_ptr<const Node> root_;
};

}  // namespace ak
