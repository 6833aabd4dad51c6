// The floors of docs/architecture.md, checked against the includes of the source tree: a folder
// may include its own files and those of folders on lower floors, never a folder on its own floor
// or above. The table lives in the document a newcomer reads, in a ```floors block, so the drawing
// and the check cannot drift apart.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// Folder → floor, read from the ```floors block: lines "N folder folder ...", '#' comments.
struct FloorTable {
  std::map<std::string, int> floor_of;
  std::string error;
};

FloorTable parse_floor_table(const std::string& markdown) {
  FloorTable table;
  std::istringstream in(markdown);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line.rfind("```floors", 0) == 0;
      continue;
    }
    if (line.rfind("```", 0) == 0) return table;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    int floor = 0;
    if (!(words >> floor)) continue;
    std::string folder;
    while (words >> folder) {
      if (table.floor_of.count(folder)) table.error += "folder " + folder + " is on two floors; ";
      table.floor_of[folder] = floor;
    }
  }
  table.error += inside ? "the ```floors block is not closed" : "no ```floors block";
  return table;
}

/// The listed folder that holds `path`: the longest one that is a prefix of it, or "".
std::string folder_of(const FloorTable& table, const std::string& path) {
  std::string best;
  for (const auto& [folder, floor] : table.floor_of)
    if (path.rfind(folder + "/", 0) == 0 && folder.size() > best.size()) best = folder;
  return best;
}

/// One source file: its path from the repository root and the includes written from the root.
struct SourceFile {
  std::string path;
  std::vector<std::string> includes;
};

/// What breaks the floors: a file in no listed folder, or an include of a folder not below it.
std::vector<std::string> floor_violations(const FloorTable& table, const std::vector<SourceFile>& files) {
  std::vector<std::string> out;
  for (const SourceFile& f : files) {
    const std::string from = folder_of(table, f.path);
    if (from.empty()) {
      out.push_back(f.path + " is in no folder of the floors table: add its folder to the table");
      continue;
    }
    for (const std::string& inc : f.includes) {
      const std::string to = folder_of(table, inc);
      if (to.empty() || to == from) continue;
      if (table.floor_of.at(to) >= table.floor_of.at(from))
        out.push_back(f.path + " (" + from + ", floor " + std::to_string(table.floor_of.at(from)) + ") includes " +
                      inc + " (" + to + ", floor " + std::to_string(table.floor_of.at(to)) +
                      "): a folder includes only folders on lower floors");
    }
  }
  return out;
}

std::string read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Every C++ and CUDA file of the product (tests, examples and build folders are not floors), with
/// the includes that name a file of the repository from its root.
std::vector<SourceFile> product_sources(const fs::path& root) {
  static const std::regex include_line(R"(#\s*include\s+"([^"]+)\")");
  const std::vector<std::string> skipped = {"tests", "examples", "build", "scripts", "docs", "prompts"};
  std::vector<SourceFile> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), root).generic_string();
    const std::string first = rel.substr(0, rel.find('/'));
    if (it->is_directory() && (first[0] == '.' || std::count(skipped.begin(), skipped.end(), first) ||
                               first.rfind("build", 0) == 0)) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string ext = it->path().extension().string();
    if (!it->is_regular_file() || rel.find('/') == std::string::npos) continue;
    if (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
    SourceFile f{rel, {}};
    const std::string text = read_whole(it->path());
    for (std::sregex_iterator m(text.begin(), text.end(), include_line), end; m != end; ++m)
      if (fs::exists(root / (*m)[1].str())) f.includes.push_back((*m)[1].str());
    files.push_back(std::move(f));
  }
  return files;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

}  // namespace

TEST_CASE("every include of the product points to its own folder or to a lower floor of docs/architecture.md") {
  const fs::path root = AK_SOURCE_DIR;
  const FloorTable table = parse_floor_table(read_whole(root / "docs" / "architecture.md"));
  INFO(table.error);
  REQUIRE(table.error.find("block") == std::string::npos);
  REQUIRE(table.error.empty());
  const std::vector<SourceFile> files = product_sources(root);
  REQUIRE(files.size() > 100);  // the walk found the tree, not an empty folder
  const std::vector<std::string> violations = floor_violations(table, files);
  INFO(joined(violations));
  CHECK(violations.empty());
}

TEST_CASE("every folder of the floors table exists") {
  const fs::path root = AK_SOURCE_DIR;
  const FloorTable table = parse_floor_table(read_whole(root / "docs" / "architecture.md"));
  for (const auto& [folder, floor] : table.floor_of) {
    INFO(folder);
    CHECK(fs::is_directory(root / folder));
  }
}

TEST_CASE("the floors check catches an include upward, sideways and from an unlisted folder") {
  const FloorTable table = parse_floor_table("text\n```floors\n0 common\n1 harness llm # peers\n2 harness/judging\n```\n");
  REQUIRE(table.error.empty());
  CHECK(table.floor_of.at("harness/judging") == 2);

  const std::vector<SourceFile> fine = {{"harness/judging/stages.cpp", {"harness/gpu.hpp", "common/result.hpp"}},
                                        {"harness/gpu.cpp", {"harness/gpu.hpp", "common/x.hpp"}}};
  CHECK(floor_violations(table, fine).empty());

  const auto upward = floor_violations(table, {{"common/x.cpp", {"llm/client.hpp"}}});
  REQUIRE(upward.size() == 1);
  CHECK(upward[0].find("common/x.cpp (common, floor 0) includes llm/client.hpp (llm, floor 1)") == 0);
  CHECK(floor_violations(table, {{"llm/a.cpp", {"harness/b.hpp"}}}).size() == 1);            // same floor
  CHECK(floor_violations(table, {{"harness/b.cpp", {"harness/judging/s.hpp"}}}).size() == 1);  // into a sub-folder above
  CHECK(floor_violations(table, {{"daemon/main.cpp", {}}}).size() == 1);                      // unlisted
}

TEST_CASE("a floors table without its block or with a folder twice is refused") {
  CHECK(!parse_floor_table("no table here").error.empty());
  CHECK(!parse_floor_table("```floors\n0 common\n").error.empty());
  CHECK(parse_floor_table("```floors\n0 common\n1 common\n```\n").error.find("two floors") != std::string::npos);
}
