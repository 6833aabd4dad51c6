#pragma once
// Scripted parts for driving the loop on the CPU: an evaluator that times sources from a table,
// a proposer that replays a list, a clock moved by hand.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "config/config.hpp"
#include "daemon/loop/clock.hpp"
#include "daemon/loop/run_loop.hpp"
#include "daemon/proposers/proposer.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "harness/evaluation/evaluator.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/support.hpp"

namespace ak::test {

class ManualClock : public Clock {
 public:
  double t = 1000;
  double step = 10;   ///< every reading advances time by this much
  double now_s() override {
    std::lock_guard<std::mutex> l(mu);
    return t += step;
  }
  void advance(double s) {   ///< from an evaluator's thread
    std::lock_guard<std::mutex> l(mu);
    t += s;
  }
  std::mutex mu;
};

/// Judges a source by its first line: "// us=<latency>" passes with that latency, "// FAIL"
/// fails the shape sweep, "// HARNESS" gets a verdict that the harness failed, anything else (the starters) passes at `starter_us`. With
/// `pair_noise` >= 0 it also times the request's best beside the candidate, as the real harness
/// does: the ratio is the latencies' unless the line says " ratio=<r>" (a slow moment of the GPU
/// that moved the medians, not the pair), and the best's own time in that pairing is its
/// latency unless the line says " best_us=<us>". The pairing's noise is `pair_noise`, or the
/// line's " noise=<n>", at 100 timed launches; more launches shrink it with their square root,
/// as a median's interval does. A source whose first line says " fails_alone"
/// fails when it is judged with no best beside it (the current best judged again on its own).
class ScriptedEvaluator : public Evaluator {
 public:
  double starter_us = 100, reference_us = 150, peak_gbps = 3000;
  double pair_noise = -1;
  std::string baseline_source = "reference kernel";   ///< what the harness measured as the baseline
  int calls = 0;
  std::vector<std::string> best_sources;   ///< what each request gave as the current best
  std::vector<int> repetitions;            ///< each request's timed launches
  std::vector<std::string> shared_compiles;   ///< each request's folder of shared compiles
  ManualClock* clock = nullptr;            ///< advanced by `eval_seconds` per evaluation
  double eval_seconds = 0;
  int harness_failures = 0;   ///< the next this many evaluations say the harness failed
  /// What a passing verdict's counters pass read (none: the verdict carries no counters).
  std::optional<HardwareCounters> counters;
  static double latency_of(const std::string& source, double otherwise) {
    return source.rfind("// us=", 0) == 0 ? std::stod(source.substr(6)) : otherwise;
  }
  Result<Verdict> evaluate(const EvalRequest& req) override {
    ++calls;
    best_sources.push_back(req.best_source);
    repetitions.push_back(req.repetitions);
    shared_compiles.push_back(req.shared_compiles);
    if (clock) clock->advance(eval_seconds);
    Verdict v;
    v.kernel_type = req.kernel_type;
    v.dtype = req.dtype;
    if (harness_failures > 0 || req.source.rfind("// HARNESS", 0) == 0) {
      harness_failures = std::max(0, harness_failures - 1);
      v.correctness = Correctness::Fail;
      v.harness_error = true;
      v.failed_stage = "smoke";
      v.message = "smoke: the reference process stopped answering";
      return v;
    }
    if (req.source.rfind("// COMPILE", 0) == 0) {
      v.correctness = Correctness::CompileError;
      v.failed_stage = "compile";
      v.message = "compile: NVRTC could not compile the file (see the compile log)";
      v.compile_log = "rmsnorm.cu(3): error: identifier \"flaot\" is undefined";
      return v;
    }
    const std::string first_line = req.source.substr(0, req.source.find('\n'));
    const bool fails_alone = req.best_source.empty() && first_line.find(" fails_alone") != std::string::npos;
    if (req.source.rfind("// FAIL", 0) == 0 || fails_alone) {
      v.correctness = Correctness::Fail;
      v.failed_stage = "shape sweep";
      v.message = "shape sweep: wrong output on 100x3000 fp16";
      return v;
    }
    const double us = latency_of(req.source, starter_us);
    if (pair_noise >= 0 && !req.best_source.empty()) {
      const double best = latency_of(req.best_source, starter_us);
      const std::string line = req.source.substr(0, req.source.find('\n'));
      const size_t r = line.find(" ratio=");
      const size_t n = line.find(" noise=");
      const double noise = (n == std::string::npos ? pair_noise : std::stod(line.substr(n + 7))) *
                           std::sqrt(100.0 / std::max(1, req.repetitions));
      v.paired = {100, best, r == std::string::npos ? us / best : std::stod(line.substr(r + 7)), noise};
      if (const size_t b = line.find(" best_us="); b != std::string::npos) v.paired.best_us = std::stod(line.substr(b + 9));
      if (const size_t b = line.find(" best_spread="); b != std::string::npos) v.paired.best_spread = std::stod(line.substr(b + 13));
    }
    v.correctness = Correctness::Pass;
    v.timing = Timing{100, us, us, us, us, us, us + 3};
    const double bytes = find_spec(req.kernel_type)->bytes(req.shape, DType::F16);
    v.throughput = bytes / (us * 1e-6) / 1e9;
    v.throughput_unit = "GB/s";
    v.pct_peak = v.throughput / peak_gbps;
    v.baseline_us = req.baseline_us.value_or(reference_us);
    v.baseline_source = req.baseline_us ? "config" : baseline_source;
    v.speedup = v.baseline_us / us;
    v.peak_vram_mb = 256;
    if (counters) v.registers = 32, v.counters = counters;
    return v;
  }
};

class ScriptedProposer : public Proposer {
 public:
  std::deque<Proposal> queue;
  std::vector<ProposalContext> seen;
  int slow = 0;   ///< as concurrency(): > 0 makes the loop ask from the experiments' threads
  int concurrency() const override { return slow; }
  int hold_ms = 0;                       ///< every proposal takes at least this long
  int asking = 0, most_at_once = 0;      ///< proposals being asked for at once
  void add(double us, const std::string& what) { queue.push_back({"// us=" + std::to_string(us) + "\n" + what + "\n", what, 10, 0}); }
  void add_failing(const std::string& what) { queue.push_back({"// FAIL\n", what, 10, 0}); }
  Result<std::optional<Proposal>> propose(const ProposalContext& ctx) override {
    {
      std::lock_guard<std::mutex> l(mu);
      most_at_once = std::max(most_at_once, ++asking);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    std::lock_guard<std::mutex> l(mu);
    --asking;
    seen.push_back(ctx);
    if (queue.empty()) return std::optional<Proposal>();
    Proposal p = queue.front();
    queue.pop_front();
    return std::optional<Proposal>(p);
  }
  std::mutex mu;
};

/// Several GPUs' worth of ScriptedEvaluator, thread-safe. A source whose first line says
/// " after=<name>" finishes only once the candidate whose second line is <name> has finished
/// (or after 5 s), so a test sets the order in which results arrive.
class OrderedEvaluator : public Evaluator {
 public:
  ScriptedEvaluator judge;
  int active = 0, most_at_once = 0;
  int hold_ms = 0;                     ///< every evaluation takes at least this long
  double wait_s = 5;                   ///< the longest an "after=" waits
  std::vector<std::string> finished;   ///< second lines, in order of completion
  Result<Verdict> evaluate(const EvalRequest& req) override {
    const std::string first = req.source.substr(0, req.source.find('\n'));
    const std::string name = second_line(req.source);
    {
      std::lock_guard<std::mutex> l(mu);
      most_at_once = std::max(most_at_once, ++active);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    std::unique_lock<std::mutex> l(mu);
    if (size_t a = first.find(" after="); a != std::string::npos) {
      const std::string wait_for = first.substr(a + 7, first.find(' ', a + 7) - a - 7);
      cv.wait_for(l, std::chrono::duration<double>(wait_s), [&] {
        return std::find(finished.begin(), finished.end(), wait_for) != finished.end();
      });
      // The other's verdict still has to reach the loop from its thread.
      l.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      l.lock();
    }
    auto v = judge.evaluate(req);
    --active;
    finished.push_back(name);
    cv.notify_all();
    return v;
  }
  static std::string second_line(const std::string& s) {
    const size_t a = s.find('\n');
    if (a == std::string::npos) return "";
    return s.substr(a + 1, s.find('\n', a + 1) - a - 1);
  }
  std::mutex mu;
  std::condition_variable cv;
};


inline Config loop_config(const TempDir& dir, const std::string& extra = "", const std::string& kernels = "") {
  std::string text = "[run]\nname = \"t\"\nworkdir = \"" + dir.path.string() + "\"\n" + extra +
                     (kernels.empty() ? "[[kernel]]\ntype = \"rmsnorm\"\nshape = [1024, 1024]\nweight = 0.5\n" : kernels);
  auto c = parse_config(text, (dir.path / "run.toml").string());
  REQUIRE(c.ok());
  return *c;
}

/// The rows the run has recorded, read back from its results table.
inline std::vector<ResultRow> rows_of(const RunLoop& loop) {
  auto r = open_results(loop.directory().results());
  REQUIRE(r.ok());
  return *r;
}

}  // namespace ak::test
