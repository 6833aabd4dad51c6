// A whole file or none: the temporary is this process's own and never left behind.
#include "common/atomic_write.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

#include "common/file_text.hpp"
#include "tests/support.hpp"

namespace ak {

TEST_CASE("a file written atomically replaces the old one whole and leaves no temporary behind", "[atomic_write]") {
  test::TempDir tmp;
  const std::string path = (tmp.path / "state.json").string();
  REQUIRE(write_file_atomic(path, "old").ok());
  REQUIRE(write_file_atomic(path, "new").ok());
  CHECK(read_file_text(path).value_or("") == "new");
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path)) files += e.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("a file that cannot be written is an error naming it, and its temporary is gone", "[atomic_write]") {
  test::TempDir tmp;
  // The temporary can be made, the rename cannot: a folder stands where the file would go.
  const std::string path = (tmp.path / "taken").string();
  std::filesystem::create_directories(std::filesystem::path(path) / "inside");
  auto s = write_file_atomic(path, "text");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("cannot write " + path));
  size_t entries = 0;   // the folder alone: no temporary, whatever its name
  for (const auto& e : std::filesystem::directory_iterator(tmp.path)) entries += e.path() != path;
  CHECK(entries == 0);
}

}  // namespace ak
