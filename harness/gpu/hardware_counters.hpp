#pragma once
/// What the hardware did during one launch of a candidate at its timed shape: the readings of
/// the counters pass (harness/judging/counters_pass.hpp), as the verdict carries them. The metric names
/// are CUPTI's (the same as Nsight Compute's); the readings are what an engineer reads off a
/// profile before choosing the next edit.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ak {

/// One reason warps were not issuing, and its share of all the warps' cycles (every resident warp,
/// every cycle it was resident); "selected" is the share spent issuing. Only the reasons that say
/// what to change are read, so the shares add up to less than 1: the rest is reasons not read.
struct StallShare {
  std::string reason;   ///< CUPTI's name: "long_scoreboard", "barrier", ...
  double share = 0;
};

/// How many blocks of the kernel fit on one SM and which resource says so, from ptxas's
/// registers, the shared memory and the block size (the occupancy calculator's rules), with the
/// driver's answer (cuOccupancyMaxActiveBlocksPerMultiprocessor) as the count.
struct OccupancyLimit {
  int blocks_per_sm = 0;          ///< the driver's answer
  double theoretical_pct = 0;     ///< resident warps at that count over the SM's maximum, in %
  std::string limiter;            ///< "registers", "shared memory", "warps" or "blocks"
  /// Each resource's own limit in blocks per SM (-1: that resource sets none).
  int by_registers = -1, by_shared_memory = -1, by_warps = -1, by_blocks = -1;
};

/// The resources of one SM and of one block that decide the occupancy limit.
struct OccupancyInputs {
  int max_threads_per_sm = 2048, max_blocks_per_sm = 32, registers_per_sm = 65536;
  int shared_bytes_per_sm = 233472, reserved_shared_bytes_per_block = 1024;
  int block_threads = 0, registers_per_thread = 0, shared_bytes_per_block = 0;
};

/// Each resource's limit and the one that binds. `driver_blocks` is the driver's count (the
/// arbiter where the rules here round differently); <= 0 takes the smallest limit computed.
OccupancyLimit occupancy_limit(const OccupancyInputs& in, int driver_blocks);

/// Where the counters pass's wall time went, in seconds: what it costs an evaluation, by part.
struct CountersPhases {
  double buffers = 0;   ///< the passes' buffers (inputs and their copies, the L2 flush, a check's slot)
  /// CUPTI's side before the first pass: the metrics' configuration (made once per worker, at its
  /// first pass), the profiler enabled on the context, the counter data, the configuration set.
  double setup = 0;
  double prepare = 0;   ///< every pass's preparation (inputs drawn, poison, module memory, L2 flush)
  double launch = 0;    ///< every pass's launch, CUPTI's start and stop of the pass included
  double check = 0;     ///< every pass's checks (module memory, inputs, counters, outputs)
  double read = 0;      ///< the counter data decoded, the metrics evaluated, the profiler disabled
  double total() const { return buffers + setup + prepare + launch + check + read; }
};

struct HardwareCounters {
  /// Non-empty: why there are no readings (counters turned off, refused by the driver, a GPU
  /// without them, a pass whose outputs were wrong); every other field but the times is then unset.
  std::string unavailable;
  double seconds = 0;   ///< the pass's wall time, set up and checks included
  CountersPhases phases;   ///< where `seconds` went (zero where the pass did not run)
  int passes = 0;    ///< replay passes the metrics took (each one launch of the kernel)
  int kernels = 0;   ///< kernels one launch ran (a launch plan's steps), readings over all of them
  std::optional<double> dram_pct;                ///< DRAM throughput, % of peak sustained
  /// SM throughput, % of peak sustained: the busiest of the SMs' issue slots, their tensor pipe
  /// and their load/store data pipe (the parts of Nsight Compute's sm__throughput that one
  /// replay pass more can read; the whole of it takes eight passes on Hopper).
  std::optional<double> sm_pct;
  std::optional<double> achieved_occupancy_pct;  ///< active warps over the SM's maximum, %
  std::optional<double> l1_hit_pct, l2_hit_pct;  ///< sector hit rates, %
  std::optional<double> tensor_pct;              ///< tensor pipe busy, % of active cycles
  std::optional<double> bank_conflicts;          ///< shared-memory bank conflicts (count)
  /// The share of shared-memory wavefronts that were conflicts' replays (a 32-way conflict: 31/32).
  std::optional<double> bank_conflict_ratio;
  std::vector<StallShare> stalls;                ///< largest first
  std::optional<OccupancyLimit> occupancy;
  std::vector<std::string> missing;              ///< readings this GPU would not give
  std::vector<std::string> dropped_metrics;      ///< CUPTI metric names behind them
  bool available() const { return unavailable.empty(); }
  /// No readings, and why.
  static HardwareCounters unavailable_because(std::string why) {
    HardwareCounters c;
    c.unavailable = std::move(why);
    return c;
  }
};

/// Every metric the pass asks CUPTI for, in a stable order: chosen so that on Hopper (GH100) they
/// take two replay passes (each pass is one more judged launch; the tests hold the count).
const std::vector<std::string>& counter_metric_names();

/// The most replay passes counter_metric_names() may take on a Hopper GPU.
inline constexpr int kCounterPassesOnHopper = 2;

/// The readings from the metrics of each range (one per kernel a launch ran, metric name ->
/// value; a metric the GPU would not give is absent). With several kernels, percentages are
/// weighted by each kernel's duration (gpu__time_duration.sum) and counts add up.
HardwareCounters counters_from_ranges(const std::vector<std::map<std::string, double>>& ranges);

void to_json(nlohmann::json& j, const HardwareCounters& c);
void from_json(const nlohmann::json& j, HardwareCounters& c);

}  // namespace ak
