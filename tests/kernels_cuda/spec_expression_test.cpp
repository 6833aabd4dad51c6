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

namespace {
Result<int64_t> int_value(const std::string& text, const std::map<std::string, int64_t>& v = {}) {
  auto e = SpecExpression::parse(text);
  INFO(text << ": " << (e ? "" : e.error().message));
  REQUIRE(e.ok());
  return e->evaluate_int(v);
}
int64_t exact(const std::string& text, const std::map<std::string, int64_t>& v = {}) {
  auto r = int_value(text, v);
  INFO(text << ": " << (r ? "" : r.error().message));
  REQUIRE(r.ok());
  return *r;
}
}  // namespace

TEST_CASE("integer spec expressions divide and take remainders as floor division does", "[spec_expression]") {
  CHECK(exact("7 / 2") == 3);
  CHECK(exact("-7 / 2") == -4);
  CHECK(exact("7 / -2") == -4);
  CHECK(exact("-7 / -2") == 3);
  CHECK(exact("-8 / 2") == -4);
  CHECK(exact("7 % 3") == 1);
  CHECK(exact("-7 % 3") == 2);
  CHECK(exact("7 % -3") == -2);
  CHECK(exact("-6 % 3") == 0);
  CHECK(exact("2 + 7 % 3 * 2") == 4);   // % binds as * and /
  CHECK(exact("(height + 2 * padding - kernel_size) / stride + 1",
              {{"height", 224}, {"padding", 1}, {"kernel_size", 3}, {"stride", 2}}) == 112);
  // Past 2^53, where doubles would round: the integer evaluation stays exact.
  CHECK(exact("a * a + 1", {{"a", 3037000499}}) == int64_t(3037000499) * 3037000499 + 1);
}

TEST_CASE("ceil_div, min and max take two arguments each", "[spec_expression]") {
  CHECK(exact("ceil_div(10, 4)") == 3);
  CHECK(exact("ceil_div(12, 4)") == 3);
  CHECK(exact("ceil_div(-10, 4)") == -2);
  CHECK(exact("ceil_div(10, -4)") == -2);
  CHECK(exact("ceil_div(0, 7)") == 0);
  CHECK(exact("min(3, -2) + max(4, 9)") == 7);
  CHECK(exact("ceil_div(n * m, min(256, max(32, n)))", {{"n", 100}, {"m", 7}}) == 7);
  CHECK(exact("max ( 1 , 2 )") == 2);
  // In doubles too, for bytes and flops.
  CHECK(value("ceil_div(10, 4) + min(1, 2) * max(3, 4) + 7 % 3") == 8);
  CHECK(value("-7 % 2") == 1);
  // A function's name is not a name the expression reads, and a dim may be called min.
  auto e = SpecExpression::parse("ceil_div(rows, 8) + min");
  REQUIRE(e.ok());
  CHECK(e->names() == std::set<std::string>{"rows", "min"});
}

TEST_CASE("integer spec expressions refuse division by zero and overflow, naming the expression", "[spec_expression]") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const std::map<std::string, int64_t> v{{"n", 3}, {"big", int64_t(1) << 62}};
  for (auto c : {Case{"1 / (n - n)", "\"1 / (n - n)\": division by zero: 1 / 0"},
                 Case{"n % (n - 3)", "division by zero: 3 % 0"},
                 Case{"ceil_div(n, n - 3)", "division by zero: ceil_div(3, 0)"},
                 Case{"big * 2", "\"big * 2\": 4611686018427387904 * 2 overflows 64-bit integers"},
                 Case{"big + big", "overflows"},
                 Case{"-big - big - big", "overflows"},
                 Case{"-(-big * 2)", "-(-9223372036854775808) overflows"},
                 Case{"(-big * 2) / -1", "/ -1 overflows"},
                 Case{"ceil_div(-big * 2, -1)", "overflows"},
                 Case{"missing + 1", "'missing' has no value here"}}) {
    auto r = int_value(c.text, v);
    INFO(c.text);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Contains(c.expected));
  }
  CHECK(exact("(-big * 2) % -1", v) == 0);
  CHECK_THAT(SpecExpression::parse("1 % 0")->evaluate({}).error().message, Contains("division by zero"));
}

TEST_CASE("a malformed call or an unknown function is refused with its position", "[spec_expression]") {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (auto c : {Case{"pow(2, 3)", "at character 4 of \"pow(2, 3)\": found '(', expected an operator"},
                 Case{"pow(2, 3)", "'pow' is not a function: the functions are ceil_div, min and max"},
                 Case{"min(2)", "at character 6 of \"min(2)\": found ')', expected ',' (min takes two arguments)"},
                 Case{"max(1, 2, 3)", "found ',', expected ')' (max takes two arguments)"},
                 Case{"ceil_div(1,", "found the end, expected a number"},
                 Case{"2 %% 3", "at character 4"}}) {
    auto e = SpecExpression::parse(c.text);
    INFO(c.text);
    REQUIRE_FALSE(e.ok());
    CHECK_THAT(e.error().message, Contains(c.expected));
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "min(1, ";
  deep += "1" + std::string(100, ')');
  CHECK_THAT(SpecExpression::parse(deep).error().message, Contains("fewer nested parentheses, calls or signs"));
}
