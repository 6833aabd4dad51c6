#include <catch2/catch.hpp>

#include "common/line_diff.hpp"

using namespace ak;

TEST_CASE("a one-line change is one hunk with three lines of context on each side", "[diff]") {
  const std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  const std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
  CHECK(unified_diff(a, b, "best.cu", "#7.cu") ==
        "--- best.cu\n+++ #7.cu\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST_CASE("equal texts have no diff, and changes far apart are separate hunks", "[diff]") {
  CHECK(unified_diff("a\nb\n", "a\nb\n", "x", "y").empty());
  std::string a, b;
  for (int i = 0; i < 30; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 2 || i == 25 ? "changed " : "") + std::to_string(i) + "\n";
  }
  const std::string d = unified_diff(a, b, "x", "y");
  size_t hunks = 0;
  for (size_t at = d.find("@@ -"); at != std::string::npos; at = d.find("@@ -", at + 1)) ++hunks;
  CHECK(hunks == 2);
  CHECK_THAT(d, Catch::Contains("-2\n+changed 2\n") && Catch::Contains("-25\n+changed 25\n"));
  CHECK_THAT(d, !Catch::Contains(" 14\n"));   // the middle, far from both changes, is not shown
}

TEST_CASE("lines added at the end and removed at the start are diffed", "[diff]") {
  const std::string d = unified_diff("head\nbody\n", "body\ntail\n", "x", "y");
  CHECK_THAT(d, Catch::Contains("-head\n") && Catch::Contains("+tail\n") && Catch::Contains(" body\n"));
}
