#include "daemon/proposers/bottleneck.hpp"

#include <algorithm>

#include "common/format.hpp"

namespace ak {
namespace {

/// A resource at or above this share of its peak is what bounds the kernel.
constexpr double kNearPeakPct = 60;
/// A stall reason that takes this share of the warps' cycles decides among the latency causes.
constexpr double kDecidingStallShare = 0.25;
/// This share of shared-memory wavefronts being replays makes conflicts the first thing to fix.
constexpr double kConflictShare = 0.5;

double share_of(const HardwareCounters& c, const std::string& reason) {
  for (auto& s : c.stalls)
    if (s.reason == reason) return s.share;
  return 0;
}

std::string pct(double x) { return format_numbers("%.0f%%", x); }

Bottleneck make(Limit l, std::string reading, std::string advice) { return {l, std::move(reading), std::move(advice)}; }

}  // namespace

const char* limit_name(Limit l) {
  switch (l) {
    case Limit::Memory: return "memory-bound";
    case Limit::MemoryLatency: return "latency-bound on global memory";
    case Limit::Compute: return "compute-bound";
    case Limit::TensorPipe: return "tensor-core-bound";
    case Limit::Barrier: return "stalled on barriers";
    case Limit::SharedConflicts: return "bound by shared-memory bank conflicts";
    case Limit::Registers: return "register-limited";
    case Limit::Unknown: break;
  }
  return "not known";
}

std::string Bottleneck::sentence() const {
  if (limit == Limit::Unknown) return reading.empty() ? "no counters" : reading;
  return std::string(limit_name(limit)) + " (" + reading + "): " + advice;
}

std::string stall_words(const std::string& reason) {
  static const std::pair<const char*, const char*> words[] = {
      {"long_scoreboard", "waiting on global memory"},
      {"short_scoreboard", "waiting on shared memory or special functions"},
      {"barrier", "waiting at a barrier"},
      {"membar", "waiting at a memory fence"},
      {"mio_throttle", "shared-memory queue full"},
      {"lg_throttle", "global-memory queue full"},
      {"math_pipe_throttle", "math pipe busy"},
      {"wait", "fixed-latency dependency"},
      {"not_selected", "ready but another warp issued"},
      {"selected", "issuing"},
      {"no_instruction", "instruction cache miss"},
      {"dispatch_stall", "dispatch stall"},
      {"sleeping", "sleeping"}};
  for (auto& [r, w] : words)
    if (reason == r) return w;
  return reason;
}

Bottleneck diagnose(const HardwareCounters& c, int registers, int spill_bytes) {
  if (!c.available()) return make(Limit::Unknown, "counters unavailable: " + c.unavailable, "");
  const double dram = c.dram_pct.value_or(0), sm = c.sm_pct.value_or(0), tensor = c.tensor_pct.value_or(0);
  const std::string regs = std::to_string(registers) + " registers a thread";
  // Spills turn register pressure into memory traffic: fixed first, whatever else the counters say.
  if (spill_bytes > 0 && registers > 0)
    return make(Limit::Registers, regs + ", " + std::to_string(spill_bytes) + " bytes spilled",
                "fewer values live per thread, or fewer threads a block");
  if (dram >= kNearPeakPct && dram >= sm)
    return make(Limit::Memory, "at " + pct(dram) + " of DRAM peak", "fewer bytes, not more threads");
  if (tensor >= kNearPeakPct)
    return make(Limit::TensorPipe, "tensor pipe busy " + pct(tensor) + " of cycles",
                "keep it fed: deeper pipelines, larger tiles, less work beside the MMAs");
  if (c.bank_conflict_ratio && *c.bank_conflict_ratio >= kConflictShare)
    return make(Limit::SharedConflicts, pct(*c.bank_conflict_ratio * 100) + " of shared-memory wavefronts are conflicts",
                "pad or swizzle the shared arrays so a warp's lanes hit different banks");
  if (sm >= kNearPeakPct) return make(Limit::Compute, "at " + pct(sm) + " of SM peak", "fewer instructions per element");
  if (const OccupancyLimit* o = c.occupancy ? &*c.occupancy : nullptr;
      o && o->limiter == "registers" && o->theoretical_pct < 50)
    return make(Limit::Registers, regs + " cap occupancy at " + pct(o->theoretical_pct),
                "fewer registers a thread (smaller per-thread tiles, fewer values held)");
  if (share_of(c, "barrier") >= kDecidingStallShare)
    return make(Limit::Barrier, pct(share_of(c, "barrier") * 100) + " of warp cycles at barriers",
                "more pipeline stages so loads overlap, fewer __syncthreads");
  if (share_of(c, "long_scoreboard") + share_of(c, "lg_throttle") >= kDecidingStallShare)
    return make(Limit::MemoryLatency,
                pct((share_of(c, "long_scoreboard") + share_of(c, "lg_throttle")) * 100) +
                    " of warp cycles waiting on global memory at " + pct(dram) + " of DRAM peak",
                "more bytes in flight: wider loads, more independent loads a thread, more warps");
  return make(Limit::Unknown, "DRAM " + pct(dram) + ", SM " + pct(sm) + " of peak: no resource near its limit",
              "");
}

std::vector<std::string> counter_lines(const HardwareCounters& c) {
  if (!c.available()) return {"counters unavailable: " + c.unavailable};
  auto opt = [](const std::optional<double>& x) { return x ? format_numbers("%.1f%%", *x) : std::string("-"); };
  std::vector<std::string> out;
  out.push_back("DRAM " + opt(c.dram_pct) + " of peak, SM " + opt(c.sm_pct) + " of peak, tensor pipe " + opt(c.tensor_pct));
  std::string occ = "occupancy " + opt(c.achieved_occupancy_pct) + " achieved";
  if (c.occupancy)
    occ += format_numbers(", %.0f%% theoretical (%.0f blocks an SM, ", c.occupancy->theoretical_pct, c.occupancy->blocks_per_sm) +
           "limited by " + c.occupancy->limiter + ")";
  out.push_back(occ);
  std::string cache = "L1 hit " + opt(c.l1_hit_pct) + ", L2 hit " + opt(c.l2_hit_pct) + ", bank conflicts ";
  cache += c.bank_conflicts ? format_numbers("%.0f", *c.bank_conflicts) : std::string("-");
  if (c.bank_conflict_ratio) cache += format_numbers(" (%.0f%% of shared wavefronts)", *c.bank_conflict_ratio * 100);
  out.push_back(cache);
  std::string stalls = "warps:";
  for (size_t i = 0; i < c.stalls.size() && i < 4; ++i)
    stalls += (i ? ", " : " ") + format_numbers("%.0f%% ", c.stalls[i].share * 100) + stall_words(c.stalls[i].reason);
  if (!c.stalls.empty()) out.push_back(stalls);
  out.push_back(std::to_string(c.passes) + " replay passes" +
                (c.kernels > 1 ? ", over " + std::to_string(c.kernels) + " kernels a launch" : "") +
                format_numbers(", %.2f s", c.seconds) +
                (c.missing.empty() ? "" : "; not given by this GPU: " + [&] {
                  std::string m;
                  for (auto& x : c.missing) m += (m.empty() ? "" : ", ") + x;
                  return m;
                }()));
  return out;
}

}  // namespace ak
