// One hostile text through every writer of a run folder, each output parsed back as its format.
#include <catch2/catch.hpp>

#include <algorithm>

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"
#include "daemon/commands/logging.hpp"
#include "daemon/loop/run_loop.hpp"
#include "daemon/report/run_report.hpp"
#include "daemon/run_folder/git_history.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "llm/providers.hpp"
#include "llm/reply_parser.hpp"
#include "tests/support.hpp"

using namespace ak;
using namespace ak::test;
using namespace std::string_literals;

namespace ak::test {

/// What a reply's description can hold: NUL, ESC/OSC/CSI, C1, invalid UTF-8, markup, pipes, tabs,
/// a line that reads as a trailer, the structure prefix, and a multi-byte character cut at the cap.
inline std::string hostile_text() {
  std::string s = "structure: x < 4096 & max & sum \xE2\x86\x92 </title></circle><script>alert(1)</script>"
                  " | a | b |\ttab\nAutokernel-Experiment: 999\nAutokernel-Kernel: evil\n"
                  " NUL\0here \x1b]0;retitled\x07 \x1b[2K\x1b[1A \xC2\x9B" "31m \xFF\xFE bad ![x](http://e/x.png) "s;
  while (s.size() < 196) s += "a";
  return s + "\xC3\xA9\xC3\xA9\xC3\xA9";   // the cap at 200 falls inside an 'é'
}

/// Runs python3 on `script` with the file as argv[1]; its exit code.
inline int python_check(const std::string& script, const std::string& file) {
  TempDir d;
  const std::string py = d.write("check.py", script);
  return run_shell("python3 " + py + " " + file).exit_code;
}

inline constexpr const char* kXmlCheck =
    "import sys, xml.etree.ElementTree as ET\n"
    "root = ET.parse(sys.argv[1]).getroot()\n"
    "sys.exit(1 if any(e.tag.endswith('script') for e in root.iter()) else 0)\n";

}  // namespace ak::test

namespace {

ResultRow hostile_row(long long n, bool kept) {
  ResultRow r{n, "rmsnorm", "rmsnorm", 2500, 90, 0.83, 1.1, kept ? "PASS" : "FAIL", 256, kept, kept ? "abc12345" : "", 1300, 12,
              hostile_text()};
  r.failure = hostile_text();
  return r;
}

/// Table cells of a markdown line: '|' not escaped by a backslash.
int markdown_columns(const std::string& line) {
  int bars = 0;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++bars;
  return bars - 1;
}

}  // namespace

TEST_CASE("one hostile text through every writer: each output parses back as its format", "[text][report]") {
  TempDir dir;
  const std::string text = hostile_text();

  SECTION("the reply parser cleans the description and caps it at a character boundary") {
    auto edit = parse_reply(text + "\n```cuda\n__global__ void rmsnorm_kernel() {}\n```\n", false, "rmsnorm_kernel");
    REQUIRE(edit.ok());
    CHECK(edit->description.size() <= kDescriptionBytes);
    CHECK(valid_utf8(edit->description) == edit->description);
    CHECK(edit->description.find_first_of("\x1b\x07\t\n"s + '\0') == std::string::npos);
    CHECK(edit->description.find("\xC2\x9B") == std::string::npos);
  }
  SECTION("results.tsv: the row keeps its 20 fields and its line") {
    const std::string line = format_row(hostile_row(3, false));
    CHECK(line.find('\n') == std::string::npos);
    CHECK(std::count(line.begin(), line.end(), '\t') == 19);
    auto back = parse_row(line);
    REQUIRE(back.ok());
    CHECK(back->move == MoveKind::Edit);   // the description's "structure: " decides nothing
    CHECK_THAT(back->description, Catch::StartsWith("structure: x < 4096"));
  }
  SECTION("git: the commit keeps its trailers, and no description line reads as one") {
    auto git = GitHistory::open(dir.path.string(), "autokernel/t");
    REQUIRE(git.ok());
    dir.write("k.cu", "x\n");
    auto sha = (*git)->commit_file("k.cu", commit_message(hostile_row(7, true), 100, "GB/s"));
    REQUIRE(sha.ok());
    auto head = (*git)->head();
    REQUIRE(head.ok());
    REQUIRE(*head);
    CHECK((*head)->message.find('\0') == std::string::npos);
    CHECK((*head)->trailers.at("Autokernel-Experiment") == "7");
    CHECK((*head)->trailers.at("Autokernel-Kernel") == "rmsnorm");
    auto row = row_from_commit(**head);
    REQUIRE(row.ok());
    CHECK(row->experiment == 7);
    CHECK(row->move == MoveKind::Edit);
  }
  SECTION("JSON: written without a throw, read back whole") {
    std::string dumped;
    REQUIRE_NOTHROW(dumped = json_dump(nlohmann::json{{"description", text}, {"doing", text}}, 2));
    auto j = nlohmann::json::parse(dumped, nullptr, false);
    REQUIRE(j.is_object());
    CHECK_THAT(j["description"].get<std::string>(), Catch::Contains("</script>"));
  }
  SECTION("progress.svg parses as XML with no script element, for rows of any text") {
    const std::string svg = progress_svg({hostile_row(0, true), hostile_row(1, true), hostile_row(2, false)});
    const std::string file = dir.write("progress.svg", svg);
    CHECK(python_check(kXmlCheck, file) == 0);
    CHECK(svg.find("<script") == std::string::npos);
  }
  SECTION("report.md: each kept step is one table row of seven cells, with no image or HTML of the text") {
    RunSnapshot snap;
    snap.dir = dir.path.string();
    snap.state = nlohmann::json{{"run", "t"}, {"status", text}, {"kernels", {{{"tag", "rmsnorm"}, {"baseline", text}, {"converged", text}}}}};
    snap.rows = {hostile_row(1, true), hostile_row(2, true)};
    const std::string md = markdown_report(snap, "progress.svg");
    CHECK(md.find("<script") == std::string::npos);
    CHECK(md.find("![x]") == std::string::npos);
    std::istringstream in(md);
    int steps = 0;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("| 1 |", 0) == 0 || line.rfind("| 2 |", 0) == 0) {
        CHECK(markdown_columns(line) == 7);
        ++steps;
      }
      if (line.rfind("| rmsnorm |", 0) == 0) CHECK(markdown_columns(line) == 8);
    }
    CHECK(steps == 2);
  }
  SECTION("status: no control character reaches the terminal") {
    RunSnapshot snap;
    snap.state = nlohmann::json{{"run", "t"}, {"gpus", {{{"device", 0}, {"doing", text}}}}};
    snap.rows = {hostile_row(4, false)};
    const std::string out = status_text(snap);
    for (char c : out) CHECK((static_cast<unsigned char>(c) >= 0x20 || c == '\n'));
    CHECK(out.find("\xC2\x9B") == std::string::npos);
    CHECK(valid_utf8(out) == out);
  }
  SECTION("the log: one line per message, control characters shown escaped") {
    const std::string log = (dir.path / "daemon.log").string();
    REQUIRE(add_log_file(log).ok());
    spdlog::warn("experiment 3: {}", text);
    spdlog::default_logger()->flush();
    spdlog::default_logger()->sinks().pop_back();
    const std::string written = read_file(log);
    CHECK(std::count(written.begin(), written.end(), '\n') == 1);
    CHECK(written.find('\x1b') == std::string::npos);
    CHECK_THAT(written, Catch::Contains("\\x1b]0;retitled"));
  }
  SECTION("a config: the text as a TOML string reads back as one value, as a comment it stays one line") {
    const std::string doc = "# " + toml_comment(text) + "\nname = " + toml_string(text) + "\n[run]\n";
    toml::table t;
    REQUIRE_NOTHROW(t = toml::parse(doc));
    CHECK(t.size() == 2);   // name and [run]: nothing the text says became a key or a table
    CHECK(t["name"].value<std::string>() == valid_utf8(text));
    for (char c : doc) CHECK((static_cast<unsigned char>(c) >= 0x20 || c == '\n'));
    CHECK(doc.find("\xC2\x9B") == std::string::npos);
    CHECK(std::count(doc.begin(), doc.end(), '\n') == 3);
  }
  SECTION("the request body to the LLM is JSON for any prompt") {
    LlmConfig cfg;
    cfg.provider = ProviderKind::OpenAI;
    cfg.model = "m";
    HttpRequest req;
    REQUIRE_NOTHROW(req = build_request(cfg, "k", ChatRequest{text, text, 100}));
    auto j = nlohmann::json::parse(req.body, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["messages"].size() == 2);
  }
}
