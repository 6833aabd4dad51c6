#include "harness/gpu/hardware_counters.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

namespace ak {
namespace {

// The metrics, chosen by what they cost as much as by what they say: on Hopper every SM-side
// counter beyond a handful costs one more replay pass, i.e. one more judged launch of the
// candidate. Nsight Compute's sm__throughput alone takes eight passes there (the maximum of
// dozens of sub-metrics) and every three stall reasons one: the set below takes two
// (kCounterPassesOnHopper, held by tests/harness/gpu/hardware_counters_test.cpp with CUPTI's
// own pass count for the chip). Several metrics share their counters with one already asked for
// and cost nothing: the sums beside the percentages of sm__warps_active and sm__inst_executed,
// the tensor pipe's elapsed beside its active cycles.
constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kDram = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
/// Every resident warp's every cycle: what the stall reasons are shares of.
constexpr const char* kWarpCycles = "sm__warps_active.sum";
/// Instructions issued: one warp selected for each, so the cycles spent issuing ("selected").
constexpr const char* kIssued = "sm__inst_executed.sum";
constexpr const char* kL1Hit = "l1tex__t_sector_hit_rate.pct";
constexpr const char* kL2Hit = "lts__t_sector_hit_rate.pct";
constexpr const char* kConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum";
constexpr const char* kSharedWavefronts = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum";
/// Any tensor-pipe op (HMMA, and on Hopper the warpgroup HGMMA/QGMMA), on every chip since Turing.
constexpr const char* kTensor = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
/// The parts of SM throughput read: issue slots, the tensor pipe, the load/store data pipe.
const std::vector<std::string> kSmParts = {"sm__inst_executed.avg.pct_of_peak_sustained_elapsed",
                                           "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
                                           "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"};
/// Every reason a verdict may name (older verdicts read more of them).
const std::vector<std::string> kStallReasons = {"long_scoreboard", "short_scoreboard", "barrier",  "membar",
                                                "mio_throttle",    "lg_throttle",      "math_pipe_throttle",
                                                "wait",            "not_selected",     "selected",
                                                "no_instruction",  "dispatch_stall",   "sleeping"};
/// The reasons read, each a counter of its own: the ones the bottleneck and an engineer choose an
/// edit by (global memory's latency and queue, barriers, shared memory's queue and latency).
/// "selected" comes free from kIssued.
const std::vector<std::string> kStallsRead = {"long_scoreboard", "barrier", "lg_throttle", "mio_throttle",
                                              "short_scoreboard"};
/// The readings' names, as `missing` lists them.
const std::vector<std::string> kReadingNames = {"DRAM throughput", "SM throughput", "achieved occupancy", "L1 hit rate",
                                                "L2 hit rate", "tensor pipe", "shared-memory bank conflicts", "warp stalls"};
std::string stall_metric(const std::string& reason) { return "smsp__warps_issue_stalled_" + reason + ".sum"; }

/// The duration-weighted mean of a percentage over the ranges that have it.
std::optional<double> weighted(const std::vector<std::map<std::string, double>>& ranges, const std::string& metric) {
  double sum = 0, weight = 0;
  bool any = false;
  for (auto& r : ranges) {
    auto it = r.find(metric);
    if (it == r.end() || !std::isfinite(it->second)) continue;
    auto d = r.find(kDuration);
    const double w = d != r.end() && d->second > 0 ? d->second : 1;
    sum += it->second * w, weight += w, any = true;
  }
  if (!any) return std::nullopt;
  return sum / weight;
}

/// The duration-weighted mean over the ranges of each range's largest of `metrics`.
std::optional<double> weighted_largest(const std::vector<std::map<std::string, double>>& ranges,
                                       const std::vector<std::string>& metrics) {
  std::vector<std::map<std::string, double>> largest;
  for (auto& r : ranges) {
    std::map<std::string, double> one;
    if (auto d = r.find(kDuration); d != r.end()) one[kDuration] = d->second;
    for (auto& m : metrics)
      if (auto it = r.find(m); it != r.end() && std::isfinite(it->second))
        one["largest"] = one.count("largest") ? std::max(one["largest"], it->second) : it->second;
    largest.push_back(std::move(one));
  }
  return weighted(largest, "largest");
}

std::optional<double> total(const std::vector<std::map<std::string, double>>& ranges, const std::string& metric) {
  double sum = 0;
  bool any = false;
  for (auto& r : ranges)
    if (auto it = r.find(metric); it != r.end() && std::isfinite(it->second)) sum += it->second, any = true;
  if (!any) return std::nullopt;
  return sum;
}

nlohmann::json optional_number(const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(); }
std::optional<double> optional_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}
/// A number of a verdict file, whatever type a damaged or hand-edited file gives it.
double number_or(const nlohmann::json& j, const char* key, double otherwise) {
  return optional_from(j, key).value_or(otherwise);
}

}  // namespace

OccupancyLimit occupancy_limit(const OccupancyInputs& in, int driver_blocks) {
  OccupancyLimit o;
  const int warps_per_block = std::max(1, (in.block_threads + 31) / 32);
  const int max_warps = std::max(1, in.max_threads_per_sm / 32);
  o.by_warps = max_warps / warps_per_block;
  o.by_blocks = in.max_blocks_per_sm;
  if (in.registers_per_thread > 0) {
    // Registers are handed out per warp in units of 256.
    const int per_warp = (in.registers_per_thread * 32 + 255) / 256 * 256;
    o.by_registers = in.registers_per_sm / per_warp / warps_per_block;
  }
  if (in.shared_bytes_per_block > 0)
    o.by_shared_memory = in.shared_bytes_per_sm / (in.shared_bytes_per_block + in.reserved_shared_bytes_per_block);
  // A tie goes to the SM's own limits first: a block that reaches the warp limit and the
  // register limit at once runs at the occupancy its size allows, and fewer registers buy nothing.
  const std::pair<const char*, int> limits[] = {
      {"warps", o.by_warps}, {"blocks", o.by_blocks}, {"shared memory", o.by_shared_memory}, {"registers", o.by_registers}};
  int least = INT_MAX;
  for (auto& [name, blocks] : limits)
    if (blocks >= 0 && blocks < least) least = blocks, o.limiter = name;
  o.blocks_per_sm = driver_blocks > 0 ? driver_blocks : std::max(0, least);
  o.theoretical_pct = 100.0 * std::min(max_warps, o.blocks_per_sm * warps_per_block) / max_warps;
  return o;
}

const std::vector<std::string>& counter_metric_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {kDuration, kDram,      kOccupancy, kWarpCycles,       kIssued,
                                  kL1Hit,    kL2Hit,     kConflicts, kSharedWavefronts, kTensor};
    n.insert(n.end(), kSmParts.begin(), kSmParts.end());
    for (auto& r : kStallsRead) n.push_back(stall_metric(r));
    return n;
  }();
  return names;
}

HardwareCounters counters_from_ranges(const std::vector<std::map<std::string, double>>& ranges) {
  HardwareCounters c;
  c.kernels = int(ranges.size());
  auto read = [&](std::optional<double>& field, const char* metric, const char* reading) {
    field = weighted(ranges, metric);
    if (!field) c.missing.push_back(reading);
  };
  read(c.dram_pct, kDram, "DRAM throughput");
  c.sm_pct = weighted_largest(ranges, kSmParts);
  if (!c.sm_pct) c.missing.push_back("SM throughput");
  read(c.achieved_occupancy_pct, kOccupancy, "achieved occupancy");
  read(c.l1_hit_pct, kL1Hit, "L1 hit rate");
  read(c.l2_hit_pct, kL2Hit, "L2 hit rate");
  read(c.tensor_pct, kTensor, "tensor pipe");
  c.bank_conflicts = total(ranges, kConflicts);
  if (!c.bank_conflicts) c.missing.push_back("shared-memory bank conflicts");
  if (auto wavefronts = total(ranges, kSharedWavefronts); c.bank_conflicts && wavefronts)
    c.bank_conflict_ratio = *wavefronts > 0 ? *c.bank_conflicts / *wavefronts : 0;
  double counted = 0;
  for (auto& r : kStallsRead)
    if (auto n = total(ranges, stall_metric(r)); n && *n > 0) c.stalls.push_back({r, *n}), counted += *n;
  if (auto n = total(ranges, kIssued); n && *n > 0 && !c.stalls.empty()) c.stalls.push_back({"selected", *n}), counted += *n;
  // Shares of every warp's cycles; never more than the cycles the reasons read add up to, so that
  // a counter that rolls up differently cannot make the shares exceed the whole.
  const double all = std::max(counted, total(ranges, kWarpCycles).value_or(0));
  for (auto& s : c.stalls) s.share /= all;
  std::stable_sort(c.stalls.begin(), c.stalls.end(), [](auto& a, auto& b) { return a.share > b.share; });
  if (c.stalls.empty()) c.missing.push_back("warp stalls");
  return c;
}

namespace {

nlohmann::json phases_json(const CountersPhases& p) {
  return {{"buffers", p.buffers}, {"setup", p.setup}, {"prepare", p.prepare},
          {"launch", p.launch},   {"check", p.check}, {"read", p.read}};
}

CountersPhases phases_from(const nlohmann::json& j) {
  CountersPhases p;
  if (!j.contains("phases") || !j["phases"].is_object()) return p;
  const auto& o = j["phases"];
  p.buffers = number_or(o, "buffers", 0), p.setup = number_or(o, "setup", 0);
  p.prepare = number_or(o, "prepare", 0), p.launch = number_or(o, "launch", 0);
  p.check = number_or(o, "check", 0), p.read = number_or(o, "read", 0);
  return p;
}

}  // namespace

void to_json(nlohmann::json& j, const HardwareCounters& c) {
  if (!c.available()) {
    j = {{"unavailable", c.unavailable}, {"seconds", c.seconds}, {"phases", phases_json(c.phases)}};
    return;
  }
  j = {{"seconds", c.seconds},
       {"phases", phases_json(c.phases)},
       {"passes", c.passes},
       {"kernels", c.kernels},
       {"dram_pct", optional_number(c.dram_pct)},
       {"sm_pct", optional_number(c.sm_pct)},
       {"achieved_occupancy_pct", optional_number(c.achieved_occupancy_pct)},
       {"l1_hit_pct", optional_number(c.l1_hit_pct)},
       {"l2_hit_pct", optional_number(c.l2_hit_pct)},
       {"tensor_pct", optional_number(c.tensor_pct)},
       {"bank_conflicts", optional_number(c.bank_conflicts)},
       {"bank_conflict_ratio", optional_number(c.bank_conflict_ratio)},
       {"missing", c.missing},
       {"dropped_metrics", c.dropped_metrics}};
  auto& stalls = j["stalls"] = nlohmann::json::array();
  for (auto& s : c.stalls) stalls.push_back({{"reason", s.reason}, {"share", s.share}});
  if (c.occupancy) {
    const OccupancyLimit& o = *c.occupancy;
    j["occupancy"] = {{"blocks_per_sm", o.blocks_per_sm},   {"theoretical_pct", o.theoretical_pct},
                      {"limiter", o.limiter},               {"by_registers", o.by_registers},
                      {"by_shared_memory", o.by_shared_memory}, {"by_warps", o.by_warps},
                      {"by_blocks", o.by_blocks}};
  }
}

void from_json(const nlohmann::json& j, HardwareCounters& c) {
  c = HardwareCounters{};
  c.seconds = number_or(j, "seconds", 0);
  c.phases = phases_from(j);
  if (j.contains("unavailable")) {
    c.unavailable = j["unavailable"].is_string() ? j["unavailable"].get<std::string>() : "unreadable";
    if (c.unavailable.empty()) c.unavailable = "no reason given";
    return;
  }
  c.passes = int(number_or(j, "passes", 0));
  c.kernels = int(number_or(j, "kernels", 0));
  c.dram_pct = optional_from(j, "dram_pct");
  c.sm_pct = optional_from(j, "sm_pct");
  c.achieved_occupancy_pct = optional_from(j, "achieved_occupancy_pct");
  c.l1_hit_pct = optional_from(j, "l1_hit_pct");
  c.l2_hit_pct = optional_from(j, "l2_hit_pct");
  c.tensor_pct = optional_from(j, "tensor_pct");
  c.bank_conflicts = optional_from(j, "bank_conflicts");
  c.bank_conflict_ratio = optional_from(j, "bank_conflict_ratio");
  if (j.contains("missing") && j["missing"].is_array())
    for (auto& m : j["missing"])
      if (m.is_string() && std::find(kReadingNames.begin(), kReadingNames.end(), m.get<std::string>()) != kReadingNames.end())
        c.missing.push_back(m.get<std::string>());
  // Only the names this file writes are read back: a verdict file edited by hand cannot put
  // words into a prompt through them.
  if (j.contains("dropped_metrics") && j["dropped_metrics"].is_array())
    for (auto& m : j["dropped_metrics"])
      if (m.is_string() && std::find(counter_metric_names().begin(), counter_metric_names().end(), m.get<std::string>()) !=
                               counter_metric_names().end())
        c.dropped_metrics.push_back(m.get<std::string>());
  if (j.contains("stalls") && j["stalls"].is_array())
    for (auto& s : j["stalls"])
      if (s.is_object() && s.contains("reason") && s["reason"].is_string() &&
          std::find(kStallReasons.begin(), kStallReasons.end(), s["reason"].get<std::string>()) != kStallReasons.end())
        c.stalls.push_back({s["reason"].get<std::string>(), number_or(s, "share", 0)});
  if (j.contains("occupancy") && j["occupancy"].is_object()) {
    const auto& o = j["occupancy"];
    std::string limiter = o.contains("limiter") && o["limiter"].is_string() ? o["limiter"].get<std::string>() : "";
    if (limiter != "registers" && limiter != "shared memory" && limiter != "warps" && limiter != "blocks") limiter = "";
    c.occupancy = OccupancyLimit{int(number_or(o, "blocks_per_sm", 0)), number_or(o, "theoretical_pct", 0), limiter,
                                 int(number_or(o, "by_registers", -1)),  int(number_or(o, "by_shared_memory", -1)),
                                 int(number_or(o, "by_warps", -1)),      int(number_or(o, "by_blocks", -1))};
  }
}

}  // namespace ak
