// config/autokernel.service checked by systemd's own tools: it must load, run the daemon as a
// user of its own with the hardening the GPU allows, and score as a well-confined service.
#include <catch2/catch.hpp>

#include <regex>

#include "tests/support.hpp"

using namespace ak;

namespace {

/// The unit as shipped, with ExecStart pointing at the binary just built (verify checks it exists).
std::string unit_for_this_build(const test::TempDir& dir) {
  std::string unit = test::read_file(std::string(AK_SOURCE_DIR) + "/config/autokernel.service");
  unit = std::regex_replace(unit, std::regex("/usr/local/bin/autokernel"), test::autokernel_binary());
  return dir.write("autokernel.service", unit);
}

bool have_systemd_analyze() {
  if (std::system("command -v systemd-analyze >/dev/null 2>&1") == 0) return true;
  std::printf("SKIPPED: no GPU needed, but systemd-analyze is not installed (scripts/install-deps.sh installs it)\n");
  return false;
}

}  // namespace

TEST_CASE("the service unit runs the daemon as its own user with the hardening the GPU allows", "[service]") {
  const std::string unit = test::read_file(std::string(AK_SOURCE_DIR) + "/config/autokernel.service");
  for (const char* line : {"DynamicUser=yes", "StateDirectory=autokernel", "NoNewPrivileges=yes", "ProtectSystem=strict",
                           "ProtectHome=yes", "PrivateTmp=yes", "DevicePolicy=closed", "DeviceAllow=char-nvidia* rw",
                           "UMask=0077", "CapabilityBoundingSet=\n", "Type=notify"})
    CHECK_THAT(unit, Catch::Contains(line));
  CHECK_THAT(unit, !Catch::Contains("User=root"));
}

TEST_CASE("the service unit restarts after a failure but stops on exit 2, the daemon's answer to a bad config", "[service]") {
  const std::string unit = test::read_file(std::string(AK_SOURCE_DIR) + "/config/autokernel.service");
  CHECK_THAT(unit, Catch::Contains("\nRestart=on-failure\n"));
  std::smatch m;
  REQUIRE(std::regex_search(unit, m, std::regex(R"(\nRestartPreventExitStatus=([0-9 ]+)\n)")));
  // The codes it names are the ones the daemon gives a config it refuses: exit 2.
  test::TempDir dir;
  const std::string bad = dir.write("bad.toml", "[run]\nnmae = \"x\"\n[[kernel]]\ntype = \"rmsnorm\"\n");
  auto r = test::run_autokernel("run --config " + bad);
  CHECK(r.exit_code == 2);
  CHECK_THAT(" " + m[1].str() + " ", Catch::Contains(" " + std::to_string(r.exit_code) + " "));
}

TEST_CASE("systemd-analyze verifies the service unit and rates its exposure as low", "[service]") {
  if (!have_systemd_analyze()) return;
  test::TempDir dir;
  const std::string path = unit_for_this_build(dir);
  auto verify = test::run_shell("systemd-analyze verify --man=no " + path);
  INFO(verify.out);
  CHECK(verify.exit_code == 0);
  auto security = test::run_shell("systemd-analyze security --offline=true " + path);
  INFO(security.out);
  std::smatch m;
  const bool rated = std::regex_search(security.out, m, std::regex(R"(Overall exposure level for autokernel\.service: ([0-9.]+))"));
  if (!rated && security.out.find("--offline") != std::string::npos) {
    std::printf("SKIPPED: this systemd-analyze cannot rate a unit offline\n");
    return;
  }
  REQUIRE(rated);
  CHECK(std::stod(m[1]) <= 4.0);   // systemd rates under 4 as OK (3.2 when this was written)
}
