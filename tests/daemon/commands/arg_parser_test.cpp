#include <catch2/catch.hpp>

#include "daemon/commands/arg_parser.hpp"

using namespace ak;

TEST_CASE("options, flags and positionals are parsed in any order", "[cli]") {
  std::string file, kernel, arch = "sm_90a";
  bool json = false, help = false;
  ArgParser p("t FILE", "test");
  p.positional("FILE", "f", &file).option("kernel", "T", "k", &kernel).option("arch", "A", "a", &arch).flag("json", "j", &json);
  REQUIRE(p.parse({"--kernel", "rmsnorm", "a.cu", "--json", "--arch=sm_80"}, help).ok());
  CHECK(file == "a.cu");
  CHECK(kernel == "rmsnorm");
  CHECK(arch == "sm_80");
  CHECK(json);
  CHECK_FALSE(help);
}

TEST_CASE("mistakes on the command line say what was expected", "[cli]") {
  std::string file, kernel;
  bool help = false;
  ArgParser p("t FILE --kernel T", "test");
  p.positional("FILE", "f", &file).option("kernel", "T", "k", &kernel);
  CHECK_THAT(p.parse({"a.cu", "--kernal", "x"}, help).error().message, Catch::Contains("unknown option --kernal"));
  CHECK_THAT(p.parse({"a.cu", "--kernel"}, help).error().message, Catch::Contains("--kernel needs a value"));
  CHECK_THAT(p.parse({}, help).error().message, Catch::Contains("missing FILE"));
  CHECK_THAT(p.parse({"a", "b"}, help).error().message, Catch::Contains("unexpected argument 'b'"));
}

TEST_CASE("--help is noticed before missing arguments", "[cli]") {
  std::string file;
  bool help = false;
  ArgParser p("t FILE", "does a thing");
  p.positional("FILE", "the file", &file);
  REQUIRE(p.parse({"--help"}, help).ok());
  CHECK(help);
  CHECK_THAT(p.help(), Catch::Contains("usage: t FILE") && Catch::Contains("does a thing"));
}
