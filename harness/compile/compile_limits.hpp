#pragma once
/// The bounds on one candidate's compile. A candidate can make NVRTC loop (an exponential template
/// instantiation) or grow without end (a huge initialised array), so each compile is bounded in
/// time (wall clock in the harness, CPU time in the compile server), in memory (the compile
/// server's address space), in what goes in (the source's size) and in what comes out (the
/// module's initialised data and its size). A compile over a limit is a COMPILE_ERROR that names
/// the limit. The time limit is shorter than the stage watchdog, so that the verdict names the
/// limit rather than a TIMEOUT of the whole worker.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ak {

/// The watchdog's limit on one stage of one candidate, compile included, unless configured
/// (`[harness] stage_timeout_s`).
inline constexpr double kDefaultStageTimeoutS = 60;

struct CompileLimits {
  double seconds = 30;                             ///< wall clock, and CPU time in the server
  uint64_t memory_bytes = 4ull << 30;              ///< the compile server's address space
  size_t source_bytes = 1 << 20;                   ///< the kernel file
  size_t initialised_data_bytes = 4 << 20;         ///< the module's initialised data sections
  size_t module_bytes = 32 << 20;                  ///< the whole cubin
};

inline constexpr CompileLimits kDefaultCompileLimits{};
static_assert(kDefaultCompileLimits.seconds < kDefaultStageTimeoutS,
              "a compile must end (as a COMPILE_ERROR) before the stage watchdog kills the worker");

/// The default limits with the time cut to half of `stage_timeout_s` where that is shorter.
CompileLimits compile_limits_within(double stage_timeout_s);

/// Which limit a compile went over, for the verdict.
enum class CompileLimit { None, Time, Memory, SourceSize, InitialisedData, ModuleSize };

/// "the time limit (30 s)", "the memory limit (4096 MiB)", ...
std::string describe_limit(CompileLimit limit, const CompileLimits& limits);

/// The name used in the compile server's protocol ("time", "memory", ...), and back.
std::string limit_name(CompileLimit limit);
CompileLimit limit_from_name(const std::string& name);

}  // namespace ak
