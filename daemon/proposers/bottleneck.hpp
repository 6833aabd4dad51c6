#pragma once
/// What limits a kernel now, read off its hardware counters the way a kernel engineer reads a
/// profile: which resource is near its peak, and, when none is, why the warps wait. One reading
/// chooses; the words say which, so the prompt and the tuner's log can name it.
#include <string>
#include <vector>

#include "harness/gpu/hardware_counters.hpp"

namespace ak {

enum class Limit {
  Unknown,          ///< no readings (or none that decide)
  Memory,           ///< DRAM near its peak: only fewer bytes help
  MemoryLatency,    ///< warps wait on global memory with DRAM far from its peak: more bytes in flight
  Compute,          ///< the SM's pipes near their peak: fewer instructions per element
  TensorPipe,       ///< the tensor cores busy: feed them, or they are the limit
  Barrier,          ///< warps wait at barriers: more pipeline stages, fewer syncs
  SharedConflicts,  ///< shared-memory bank conflicts replay most of its traffic: pad or swizzle
  Registers,        ///< occupancy capped by registers (or registers spilled): fewer a thread
};
const char* limit_name(Limit l);   ///< "memory-bound", "register-limited", ...

struct Bottleneck {
  Limit limit = Limit::Unknown;
  std::string reading;   ///< the reading that chose it: "DRAM 91% of peak"
  std::string advice;    ///< what that asks of the next edit: "fewer bytes, not more threads"
  /// "memory-bound at 91% of DRAM peak: fewer bytes, not more threads".
  std::string sentence() const;
};

/// Where these are from: the verdict's counters and ptxas's registers and spills of the file.
Bottleneck diagnose(const HardwareCounters& c, int registers, int spill_bytes);

/// The readings in a few short lines for people (`bench --counters`, the report).
std::vector<std::string> counter_lines(const HardwareCounters& c);

/// A stall reason as an engineer says it: "long_scoreboard" -> "waiting on global memory".
std::string stall_words(const std::string& reason);

}  // namespace ak
