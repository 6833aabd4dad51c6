#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"

using namespace ak;

namespace {

bool is_valid_utf8(const std::string& s) { return valid_utf8(s) == s; }

}  // namespace

TEST_CASE("invalid UTF-8 bytes become U+FFFD and valid text is kept byte for byte", "[text]") {
  CHECK(valid_utf8("x \xE2\x86\x92 y \xC3\xA9") == "x \xE2\x86\x92 y \xC3\xA9");
  CHECK(valid_utf8("a\xFFz") == "a\xEF\xBF\xBDz");
  CHECK(valid_utf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");           // an overlong '/'
  CHECK(valid_utf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");   // a surrogate
  CHECK(valid_utf8("\xE2\x86") == "\xEF\xBF\xBD\xEF\xBF\xBD");           // cut short at the end
}

TEST_CASE("a cap never cuts inside a character, wherever it falls", "[text]") {
  const std::string arrows = std::string(195, 'a') + "\xE2\x86\x92\xE2\x86\x92\xE2\x86\x92";   // 204 bytes
  for (size_t cap = 0; cap <= arrows.size() + 2; ++cap) {
    const std::string c = cap_utf8(arrows, cap);
    INFO("cap " << cap);
    CHECK(c.size() <= cap);
    CHECK(is_valid_utf8(c));
    CHECK_NOTHROW(nlohmann::json(c).dump());
  }
  CHECK(cap_utf8(arrows, 200) == std::string(195, 'a') + "...");
}

TEST_CASE("a line of outside text loses its control characters, keeps its words and is capped", "[text]") {
  using namespace std::string_literals;
  const std::string hostile = "ok\x1b]0;pwned\x07 \x1b[2Kline\x00two\ttab\r\nnext \xC2\x9B" "31m \xE2\x80\xAE" "evil"s;
  const std::string line = untrusted_line(hostile, 500);
  CHECK(line.find('\x1b') == std::string::npos);
  CHECK(line.find('\x07') == std::string::npos);
  CHECK(line.find('\0') == std::string::npos);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find("\xC2\x9B") == std::string::npos);   // C1 CSI
  CHECK(line.find("\xE2\x80\xAE") == std::string::npos);   // right-to-left override
  CHECK_THAT(line, Catch::Contains("pwned") && Catch::Contains("line") && Catch::Contains("tab") && Catch::Contains("evil"));
  const std::string with_nul = std::string("a\0b", 3);
  CHECK(untrusted_line(with_nul, 10) == "ab");
  CHECK(untrusted_text("log\n\tline\r\n", 100) == "log\n\tline\n");
  CHECK(untrusted_line("  \x01\x02  ", 100).empty());
}

TEST_CASE("a kernel file with a NUL or an ESC is refused with the line it is on, and tabs and CRLF pass", "[text]") {
  CHECK_FALSE(kernel_file_problem("__global__ void k() {\r\n\tint x;\n}\n"));
  auto nul = kernel_file_problem(std::string("line one\nline\0two\n", 18));
  REQUIRE(nul);
  CHECK_THAT(*nul, Catch::Contains("line 2") && Catch::Contains("U+0000"));
  auto esc = kernel_file_problem("// \x1b[2J\n");
  REQUIRE(esc);
  CHECK_THAT(*esc, Catch::Contains("U+001B"));
  CHECK(kernel_file_problem("// \xC2\x9B\n"));   // C1
  CHECK(kernel_file_problem("// \xFF\n"));       // not UTF-8
  CHECK_FALSE(kernel_file_problem("// x \xE2\x86\x92 y\n"));
}

TEST_CASE("each writer's escape: TSV keeps its columns, the terminal sees no control, XML and markdown no markup", "[text]") {
  CHECK(tsv_field("a\tb\nc\rd") == "a b c d");
  CHECK(terminal_safe("\x1b]0;x\x07 \xC2\x9B" "2J\n") == "\\x1b]0;x\\x07 \\u009b2J\\n");
  CHECK(xml_escape("</title><script>x & y</script>\"'\x01") == "&lt;/title&gt;&lt;script&gt;x &amp; y&lt;/script&gt;&quot;&apos;");
  CHECK(markdown_cell("a | b ![img](http://x/y.png) <b>") == "a \\| b \\!\\[img\\](http://x/y.png) &lt;b&gt;");
  CHECK_NOTHROW(json_dump(nlohmann::json(std::string("\xE2\x86"))));
  CHECK(is_valid_utf8(json_dump(nlohmann::json(std::string("x\xE2\x86")))));
}
