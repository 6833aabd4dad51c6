#pragma once
/// What the harness says about one candidate: its correctness class, the first failing stage
/// with its worst element, the split of time spent, and the measurements when it passed.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/gpu/hardware_counters.hpp"

namespace ak {

enum class Correctness { Pass, Fail, CompileError, Timeout, Crash, Suspect };
const char* correctness_name(Correctness c);   ///< "PASS", "FAIL", "COMPILE_ERROR", ...
std::optional<Correctness> parse_correctness(const std::string& s);

struct StageResult {
  std::string name;       ///< "compile", "smoke", "shape sweep", ...
  bool passed = false;
  double seconds = 0;
  std::string detail;     ///< what was checked, or what failed
};

/// Per-launch GPU durations of the candidate at the benchmark shape.
struct Timing {
  int samples = 0;
  double median_us = 0, min_us = 0, max_us = 0, p10_us = 0, p90_us = 0;
  double event_median_us = 0;   ///< the same launches timed with CUDA events, as a cross-check
  std::string source = "CUPTI"; ///< where the durations came from ("CUDA events ..." when CUPTI fell short)
  double spread() const { return median_us > 0 ? (p90_us - p10_us) / median_us : 0; }
};

/// The candidate timed beside the current best, launch for launch on the same inputs: the
/// ratio of each pair cancels whatever the GPU did in that moment (clocks, a neighbour).
struct PairedTiming {
  int pairs = 0;               ///< 0: no best was given, nothing paired
  double best_us = 0;          ///< the best's median in these very launches
  double ratio = 0;            ///< median over pairs of candidate / best
  double noise = 0;            ///< half-width of the 95% interval of that median
  double best_spread = 0;      ///< (p90 - p10) / median of the best's own launches here
  /// What the checks of the best's own timed launches found: the best is judged as the
  /// candidate is. Non-empty: the pairing proves nothing and the best needs a verdict of its own.
  std::string best_failure;
  /// Faster than the best by more than `threshold` beyond the noise: worth keeping.
  bool clears(double threshold) const {
    return pairs > 0 && best_failure.empty() && ratio < 1 - threshold - noise;
  }
};

struct Verdict {
  Correctness correctness = Correctness::Fail;
  std::string message;          ///< one line a person (or an LLM) can act on
  std::string kernel_type, dtype, shape, arch, gpu;
  uint64_t seed = 0;            ///< the stage inputs' seed (EvaluationSeeds::stage_inputs)
  bool fixed_seed = false;      ///< made with a given seed: its choices were predictable

  // Where it failed, when it did.
  std::string failed_stage, failed_shape, failed_dtype, failed_input;
  int64_t worst_index = -1;
  double worst_got = 0, worst_expected = 0;
  std::string compile_log;

  // What the compiler said of the entry point at the benchmark dtype.
  int registers = -1, spill_bytes = 0, static_smem_bytes = 0;
  int block_threads = 0, rows_per_block = 1;

  std::vector<StageResult> stages;
  double total_seconds = 0;

  // Measurements, when the stages passed.
  std::optional<Timing> timing;
  double throughput = 0;        ///< GB/s or TFLOPS, per the spec's metric
  std::string throughput_unit;
  double pct_peak = 0;          ///< fraction of the measured peak of the bounding resource
  double peak_used = 0;         ///< that peak, in the same unit
  double baseline_us = 0;
  std::string baseline_source;  ///< "config", "reference kernel", "cuBLAS" or "PyTorch eager"
  double reference_us = 0, starter_us = 0;
  double cublas_us = 0;         ///< the cuBLAS GEMMs of the shape (types whose baseline is cuBLAS)
  double speedup = 0;           ///< baseline_us / median_us
  /// User types: the module under torch.compile at the timed shape and dtype (0: not measured;
  /// why is in notes), beside PyTorch eager, which is their baseline.
  double torch_compile_us = 0;
  /// User types: every checked output also within KernelBench's own checker (atol = rtol: fp32
  /// 1e-4, fp16 and bf16 1e-2, against PyTorch as KernelBench runs it), so a result can be compared
  /// with KernelBench's; unset for built-in types.
  std::optional<bool> kernelbench_pass;
  double peak_vram_mb = 0;
  PairedTiming paired;          ///< against the current best, when the request gave one
  /// What the hardware did in one more launch at the timed shape (harness/judging/counters_pass.hpp):
  /// readings, or why there are none; unset where no pass was asked for or the stages failed.
  std::optional<HardwareCounters> counters;

  std::vector<std::string> notes;   ///< what went wrong around the candidate (baseline timing)
  bool context_lost = false;    ///< the worker's CUDA context is unusable: it must be replaced
  /// The harness could not judge the candidate (a user type's reference process would not start,
  /// its reference failed): the message says what to fix; the candidate is not known to be wrong.
  bool harness_error = false;

  bool passed() const { return correctness == Correctness::Pass; }
};

void to_json(nlohmann::json& j, const Verdict& v);
void from_json(const nlohmann::json& j, Verdict& v);

}  // namespace ak
