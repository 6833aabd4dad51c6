#include <catch2/catch.hpp>

#include <filesystem>

#include "daemon/proposers/model_notes.hpp"
#include "tests/support.hpp"

using namespace ak;

TEST_CASE("the model's notes are written to the run folder and read back, and none yet reads as empty", "[notes]") {
  test::TempDir dir;
  auto none = read_model_notes(dir.path.string(), "softmax");
  REQUIRE(none.ok());
  CHECK(none->scratchpad.empty());
  REQUIRE(write_model_notes(dir.path.string(), "softmax", {"avoid: x\ntry: \"y\"", "row_in_registers"}).ok());
  auto back = read_model_notes(dir.path.string(), "softmax");
  REQUIRE(back.ok());
  CHECK(back->scratchpad == "avoid: x\ntry: \"y\"");
  CHECK(back->show_variant == "row_in_registers");
  CHECK((std::filesystem::status(dir.path / "notes").permissions() & std::filesystem::perms::others_all) ==
        std::filesystem::perms::none);
}

TEST_CASE("a damaged notes file is an error that names it and says what to do", "[notes]") {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path / "notes");
  dir.write("notes/softmax.json", "{\"scratchpad\": 3}");
  auto r = read_model_notes(dir.path.string(), "softmax");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("notes/softmax.json") && Catch::Contains("delete it"));
}
