// The suite's own rule on test names: ctest registers each Catch2 test by its name, and a name
// with a semicolon becomes two ctest entries, each of which runs no test and fails as "No tests
// ran" (or, worse, would pass if that were not an error): the test itself never runs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// The names of the TEST_CASEs in one source text that hold a semicolon.
std::vector<std::string> names_with_semicolon(const std::string& text) {
  static const std::regex test_case(R"re(TEST_CASE\(\s*"((?:[^"\\]|\\.)*)")re");
  std::vector<std::string> bad;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), test_case); it != std::sregex_iterator(); ++it)
    if ((*it)[1].str().find(';') != std::string::npos) bad.push_back((*it)[1].str());
  return bad;
}

}  // namespace

TEST_CASE("no test name holds a semicolon, which ctest would split into two tests that run nothing") {
  std::vector<std::string> bad;
  for (auto& entry : fs::recursive_directory_iterator(fs::path(AK_SOURCE_DIR) / "tests")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    for (auto& name : names_with_semicolon(text.str())) bad.push_back(entry.path().filename().string() + ": " + name);
  }
  std::string listed;
  for (auto& b : bad) listed += "\n  " + b;
  INFO("rename these (a comma reads as well):" + listed);
  CHECK(bad.empty());
}

TEST_CASE("the test-name check finds a semicolon in a name and none in the text around it") {
  CHECK(names_with_semicolon("TEST_CASE(\"a; b\", \"[x]\") { f(); }").size() == 1);
  CHECK(names_with_semicolon("TEST_CASE(\"a, b\", \"[x]\") { f(); g(); }").empty());
  CHECK(names_with_semicolon("TEST_CASE(\"say \\\"hi\\\"; then\") {}").size() == 1);
}
