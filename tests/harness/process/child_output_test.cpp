// What a child writes outside its protocol, cleaned and capped before it reaches the log.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <mutex>
#include <vector>

#include "harness/process/child_output.hpp"

using namespace ak;

namespace {

/// True when every byte is printable: no C0 control but tab, no DEL, no byte that starts a C1
/// control (ESC [ and its one-byte form 0x9B) or an invalid UTF-8 sequence.
bool printable(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\t') || c == 0x7F || c == 0xFF || c == 0xFE) return false;
  return s.find("\xC2\x9B") == std::string::npos && s.find("\xE2\x80\xAE") == std::string::npos;
}

struct Lines {
  std::mutex mutex;
  std::vector<std::string> lines;
  OutputRelay::Sink sink() {
    return [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(l);
    };
  }
};

}  // namespace

TEST_CASE("a cleaned line keeps text, tabs and UTF-8 and replaces every control character", "[child-output]") {
  CHECK(clean_output_line("plain text\twith a tab, caf\xC3\xA9, \xE2\x9C\x93") ==
        "plain text\twith a tab, caf\xC3\xA9, \xE2\x9C\x93");
  CHECK(clean_output_line("\x1B]0;owned\x07title") == "?]0;owned?title");
  CHECK(clean_output_line(std::string("nul\0byte", 8)) == "nul?byte");
  CHECK(clean_output_line("carriage\rreturn\x7F") == "carriage?return?");
  CHECK(clean_output_line("c1 csi \xC2\x9B" "2J") == "c1 csi ?2J");                 // U+009B, a one-character CSI
  CHECK(clean_output_line("raw c1 \x9B" "2J") == "raw c1 ?2J");                     // not UTF-8 at all
  CHECK(clean_output_line("bidi \xE2\x80\xAE" "desrever") == "bidi ?desrever");      // U+202E
  CHECK(clean_output_line("invalid \xFF\xFE, cut \xC3") == "invalid ??, cut ?");
  CHECK(clean_output_line("overlong \xC0\xAF slash") == "overlong ?? slash");
  CHECK(clean_output_line("surrogate \xED\xA0\x80!") == "surrogate ??" "?!");  // split: no trigraph
}

TEST_CASE("a relay prefixes each line, splits at newlines and cuts long lines", "[child-output]") {
  int p[2];
  REQUIRE(pipe(p) == 0);
  Lines got;
  OutputRelay::Caps caps;
  caps.line_bytes = 40;
  {
    OutputRelay relay(p[0], "worker 0: ", got.sink(), caps);
    const std::string text = "first\r\n\x1B[2Jsecond\n" + std::string(100, 'x') + "\nlast without newline";
    REQUIRE(write(p[1], text.data(), text.size()) == ssize_t(text.size()));
    close(p[1]);
  }
  REQUIRE(got.lines.size() == 4);
  CHECK(got.lines[0] == "worker 0: first");
  CHECK(got.lines[1] == "worker 0: ?[2Jsecond");
  CHECK(got.lines[2] == "worker 0: " + std::string(40, 'x') + " ... (line cut)");
  CHECK(got.lines[3] == "worker 0: last without newline");
  for (auto& l : got.lines) CHECK(printable(l));
}

TEST_CASE("a relay drains a flood without blocking the writer, relays up to its cap and says what it dropped",
          "[child-output]") {
  int p[2];
  REQUIRE(pipe(p) == 0);
  Lines got;
  OutputRelay::Caps caps;
  caps.window_bytes = 1000;
  {
    OutputRelay relay(p[0], "w: ", got.sink(), caps);
    const std::string line(99, 'y');
    // 1 MiB: far more than a pipe holds, so the writer blocks unless the relay reads it all.
    for (int i = 0; i < 10000; ++i) REQUIRE(write(p[1], (line + "\n").data(), 100) == 100);
    close(p[1]);
  }
  size_t relayed = 0;
  for (auto& l : got.lines)
    if (l.find("yyy") != std::string::npos) relayed += l.size() - 3;
  CHECK(relayed <= 1000);
  CHECK(relayed >= 900);
  REQUIRE_FALSE(got.lines.empty());
  CHECK_THAT(got.lines.back(), Catch::StartsWith("w: (") && Catch::Contains("bytes of output dropped"));
}

TEST_CASE("stopping a relay does not wait for a writer that keeps its pipe open", "[child-output]") {
  int p[2];
  REQUIRE(pipe(p) == 0);
  Lines got;
  auto relay = std::make_unique<OutputRelay>(p[0], "w: ", got.sink());
  REQUIRE(write(p[1], "said\n", 5) == 5);
  const auto t0 = std::chrono::steady_clock::now();
  relay->stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  close(p[1]);
  REQUIRE(got.lines.size() == 1);
  CHECK(got.lines[0] == "w: said");
}
