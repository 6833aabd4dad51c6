#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>

#include "daemon/commands/logging.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

/// Logs one warning and one info line with stderr pointed at a file; returns what was written.
std::string capture_stderr(bool as_journal) {
  test::TempDir d;
  std::string path = (d.path / "stderr.txt").string();
  int saved = dup(2);
  FILE* f = std::fopen(path.c_str(), "w");
  dup2(fileno(f), 2);
  struct stat st {};
  fstat(2, &st);
  if (as_journal) setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)).c_str(), 1);
  else unsetenv("JOURNAL_STREAM");
  setup_logging(spdlog::level::info);
  spdlog::warn("disk almost full");
  spdlog::info("experiment 3 kept");
  spdlog::debug("not shown at info");
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::fclose(f);
  unsetenv("JOURNAL_STREAM");
  setup_logging(spdlog::level::info);
  return test::read_file(path);
}

}  // namespace

TEST_CASE("under the journal, lines carry a <N> priority and no timestamp", "[logging]") {
  std::string out = capture_stderr(true);
  CHECK(out == "<4>disk almost full\n<6>experiment 3 kept\n");
}

TEST_CASE("on a terminal, lines carry the time and the level", "[logging]") {
  std::string out = capture_stderr(false);
  CHECK_THAT(out, Catch::Matches(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} .*warn.* disk almost full\n.*info.* experiment 3 kept\n)"));
  CHECK_THAT(out, !Catch::Contains("not shown"));
}

TEST_CASE("a JOURNAL_STREAM that names another file is not the journal", "[logging]") {
  setenv("JOURNAL_STREAM", "1:1", 1);
  CHECK_FALSE(stderr_is_journal());
  unsetenv("JOURNAL_STREAM");
}

TEST_CASE("log levels parse, and map to syslog priorities", "[logging]") {
  CHECK(parse_log_level("debug") == spdlog::level::debug);
  CHECK_FALSE(parse_log_level("loud").has_value());
  CHECK(syslog_priority(spdlog::level::err) == 3);
  CHECK(syslog_priority(spdlog::level::info) == 6);
}

TEST_CASE("the log file gets every line with a timestamp", "[logging]") {
  test::TempDir d;
  std::string path = (d.path / "autokernel.log").string();
  setup_logging(spdlog::level::warn);
  REQUIRE(add_log_file(path).ok());
  spdlog::debug("a debug line for the file");
  spdlog::default_logger()->flush();
  CHECK_THAT(test::read_file(path), Catch::Contains("debug") && Catch::Contains("a debug line for the file"));
  setup_logging(spdlog::level::info);
  std::string not_a_dir = d.write("file", "x");
  auto bad = add_log_file(not_a_dir + "/x.log");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("cannot open the log file"));
}
