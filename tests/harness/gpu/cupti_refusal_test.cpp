// CUPTI's refusals worded for the verdict, without a GPU: a driver that keeps counters to
// administrators names the option that allows them and who the process runs as; the other
// refusals a person can act on say what to change; the rest are named and no more.
#include <catch2/catch.hpp>

#include "harness/gpu/cupti_refusal.hpp"
#include "harness/gpu/hardware_counters.hpp"
#include "harness/gpu/range_profiler.hpp"
#include "harness/judging/verdict.hpp"

using namespace ak;

namespace {

const ProcessIdentity kServiceUser{61234};   // a systemd DynamicUser's uid
const ProcessIdentity kRoot{0};

std::string refused(CUptiResult r, const ProcessIdentity& who = kServiceUser, const char* name = nullptr) {
  return cupti_failure_reason(r, name ? name : "CUPTI_ERROR_X", "asking which counters the GPU offers", who);
}

}  // namespace

TEST_CASE("a driver that keeps counters to administrators: the option that allows them, root, and how to check", "[counters]") {
  const std::string why = refused(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, kServiceUser, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  CHECK_THAT(why, Catch::StartsWith("asking which counters the GPU offers failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ("));
  CHECK_THAT(why, Catch::Contains("only administrators"));
  CHECK_THAT(why, Catch::Contains("runs as uid 61234"));
  CHECK_THAT(why, Catch::Contains("`options nvidia NVreg_RestrictProfilingToAdminUsers=0`"));
  CHECK_THAT(why, Catch::Contains("/etc/modprobe.d/"));
  CHECK_THAT(why, Catch::Contains("reboot or reload the nvidia module"));
  CHECK_THAT(why, Catch::Contains("run autokernel as root"));
  CHECK_THAT(why, Catch::Contains("docs/operations.md") && Catch::Contains("autokernel bench --counters"));
  CHECK_THAT(why, Catch::Contains("[harness] counters = false"));
}

TEST_CASE("root refused counters lacks the capability the driver asks, and is told so rather than to become root", "[counters]") {
  const std::string why = refused(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, kRoot);
  CHECK_THAT(why, Catch::Contains("runs as root") && Catch::Contains("CAP_SYS_ADMIN"));
  CHECK_THAT(why, Catch::Contains("NVreg_RestrictProfilingToAdminUsers=0"));
  CHECK_THAT(why, !Catch::Contains("run autokernel as root"));
}

TEST_CASE("a result CUPTI gives no name for is shown by its number", "[counters]") {
  CHECK_THAT(cupti_failure_reason(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, nullptr, "opening a pass", kServiceUser),
             Catch::StartsWith("opening a pass failed: CUPTI result 35 (the driver lets only administrators"));
  CHECK_THAT(cupti_failure_reason(CUPTI_ERROR_UNKNOWN, "", "opening a pass", kServiceUser),
             Catch::Equals("opening a pass failed: CUPTI result 999"));
}

TEST_CASE("the other refusals a person can act on say what to change, and the rest add nothing", "[counters]") {
  CHECK_THAT(refused(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED), Catch::Contains("MIG") && Catch::Contains("whole GPU"));
  CHECK_THAT(refused(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES), Catch::Contains("hypervisor"));
  CHECK_THAT(refused(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED), Catch::Contains("another profiler"));
  CHECK_THAT(refused(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), Catch::Contains("another profiler"));
  CHECK_THAT(refused(CUPTI_ERROR_NOT_INITIALIZED), Catch::Contains("libnvperf_host.so") && Catch::Contains("LD_LIBRARY_PATH"));
  CHECK_THAT(refused(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED), Catch::Contains("crypto-mining"));
  CHECK_THAT(refused(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED), Catch::Contains("confidential computing"));
  for (CUptiResult r : {CUPTI_ERROR_INVALID_PARAMETER, CUPTI_ERROR_OUT_OF_MEMORY, CUPTI_ERROR_UNKNOWN}) {
    INFO(int(r));
    CHECK(refused(r) == "asking which counters the GPU offers failed: CUPTI_ERROR_X");
  }
}

TEST_CASE("a refusal reaches the verdict as the counters' reason, word for word, and the verdict still passes", "[counters]") {
  const std::string why = refused(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, kServiceUser, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  // The counters pass strips the prefix CUPTI's errors carry (harness/judging/counters_pass.cpp).
  const std::string error_message = std::string(kCountersUnavailable) + why;
  REQUIRE(error_message.rfind(kCountersUnavailable, 0) == 0);
  Verdict v;
  v.correctness = Correctness::Pass;
  v.counters = HardwareCounters::unavailable_because(error_message.substr(std::string(kCountersUnavailable).size()));
  const Verdict back = nlohmann::json(v).get<Verdict>();
  CHECK(back.passed());
  REQUIRE(back.counters.has_value());
  CHECK_FALSE(back.counters->available());
  CHECK(back.counters->unavailable == why);
}
