#include <catch2/catch.hpp>

#include "kernels_cuda/spec_expression.hpp"

using namespace ak;
using Catch::Contains;

namespace {
double value(const std::string& text, const std::map<std::string, double>& v = {}) {
  auto e = SpecExpression::parse(text);
  INFO(text << ": " << (e ? "" : e.error().message));
  REQUIRE(e.ok());
  auto r = e->evaluate(v);
  REQUIRE(r.ok());
  return *r;
}
}  // namespace

TEST_CASE("spec expressions follow arithmetic's precedence", "[spec_expression]") {
  CHECK(value("1 + 2 * 3") == 7);
  CHECK(value("(1 + 2) * 3") == 9);
  CHECK(value("10 - 4 - 3") == 3);
  CHECK(value("12 / 4 / 3") == 1);
  CHECK(value("7 / 2") == 3.5);
  CHECK(value("-3 * -(2 + 1)") == 9);
  CHECK(value("2 * batch_size * dim * elem", {{"batch_size", 4096}, {"dim", 393216}, {"elem", 4}}) == 2.0 * 4096 * 393216 * 4);
  // Products past 2^63 stay finite: bytes and flops are doubles.
  CHECK(value("a * a * a", {{"a", 4e9}}) == 6.4e28);
}

TEST_CASE("spec expressions list the names they read", "[spec_expression]") {
  auto e = SpecExpression::parse("2 * (rows + cols) * elem");
  REQUIRE(e.ok());
  CHECK(e->names() == std::set<std::string>{"rows", "cols", "elem"});
  auto missing = e->evaluate({{"rows", 1}, {"cols", 2}});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Contains("'elem' has no value"));
}

TEST_CASE("a malformed spec expression is refused with its position", "[spec_expression]") {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (auto c : {Case{"", "at character 1 of \"\": found the end, expected a number"},
                 Case{"2 +", "at character 4"},
                 Case{"(2 + 3", "found the end, expected ')'"},
                 Case{"2 ** 3", "at character 4 of \"2 ** 3\": found '*'"},
                 Case{"2 3", "at character 3 of \"2 3\": found '3', expected an operator"},
                 Case{"__import__('os')", "at character 11"},
                 Case{"2 ^ 3", "found '^'"},
                 Case{"1.5 * n", "at character 2 of \"1.5 * n\": found '.'"},
                 Case{"1234567890123456789", "an integer of at most 18 digits"}}) {
    auto e = SpecExpression::parse(c.text);
    INFO(c.text);
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.error().message, Contains(c.expected));
  }
  CHECK_THAT(SpecExpression::parse(std::string(100, '(') + "1" + std::string(100, ')')).error().message,
             Contains("fewer nested parentheses"));
  CHECK_THAT(SpecExpression::parse("1 / (n - n)")->evaluate({{"n", 3}}).error().message, Contains("division by zero"));
}
