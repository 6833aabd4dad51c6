#include "harness/gpu/cupti_refusal.hpp"

#include <unistd.h>

namespace ak {
namespace {

constexpr const char* kTurnOff = "[harness] counters = false skips the pass";

std::string privileges_advice(const ProcessIdentity& who) {
  if (who.root())
    // The driver's test is the CAP_SYS_ADMIN capability, not the user id: a container or a unit
    // with an empty capability bounding set is root without it.
    return "the driver lets only administrators read GPU performance counters, and this process runs as root "
           "without the CAP_SYS_ADMIN capability the driver asks of one (a container, or a capability bounding set "
           "that drops it): load the nvidia module with `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in "
           "/etc/modprobe.d/ on the host and reboot or reload the module (docs/operations.md, \"Hardware "
           "counters\"), or give the process CAP_SYS_ADMIN; " +
           std::string(kTurnOff);
  return "the driver lets only administrators read GPU performance counters (NVreg_RestrictProfilingToAdminUsers=1) "
         "and this process runs as uid " +
         std::to_string(who.uid) +
         ": as root, add `options nvidia NVreg_RestrictProfilingToAdminUsers=0` to a file in /etc/modprobe.d/ and "
         "reboot or reload the nvidia module, or run autokernel as root; docs/operations.md, \"Hardware counters\", "
         "says how to check with `autokernel bench --counters` as the service's user; " +
         kTurnOff;
}

/// What to do about a result, or "" where nothing a person does would change it.
std::string advice(CUptiResult r, const ProcessIdentity& who) {
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: return privileges_advice(who);
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "the hypervisor does not let this virtual GPU be profiled: its administrator must enable profiling for "
             "the vGPU; " + std::string(kTurnOff);
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return "CUPTI cannot profile this virtual GPU; " + std::string(kTurnOff);
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
      return "CUPTI cannot read counters on a MIG instance: they need the whole GPU, with MIG off; " +
             std::string(kTurnOff);
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
      return "confidential computing mode forbids profiling on this GPU; " + std::string(kTurnOff);
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
      return "a crypto-mining GPU (CMP) has no performance counters; " + std::string(kTurnOff);
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return "CUPTI cannot read counters under WSL; " + std::string(kTurnOff);
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
      return "CUPTI cannot read counters on an SLI group; " + std::string(kTurnOff);
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "another profiler holds this process's counters (Nsight Compute, Nsight Systems or another CUPTI "
             "client attached to the worker?): run without it";
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
      return "one cause: CUPTI could not load its metric library libnvperf_host.so; the CUDA toolkit's lib64 must be "
             "on the worker's LD_LIBRARY_PATH";
    default: return "";
  }
}

}  // namespace

ProcessIdentity ProcessIdentity::current() { return {long(geteuid())}; }

std::string cupti_failure_reason(CUptiResult result, const char* result_name, const std::string& what,
                                 const ProcessIdentity& who) {
  std::string name = result_name && *result_name ? result_name : "CUPTI result " + std::to_string(int(result));
  std::string why = what + " failed: " + name;
  if (std::string a = advice(result, who); !a.empty()) why += " (" + a + ")";
  return why;
}

}  // namespace ak
