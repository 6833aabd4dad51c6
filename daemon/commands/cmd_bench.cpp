// autokernel bench FILE.cu --kernel TYPE: one full evaluation, in a worker process, as the loop
// would run it. Also the fixed evaluation an outside agent can call.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/commands/kernel_file.hpp"
#include "daemon/proposers/bottleneck.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/user_type.hpp"
#include "harness/worker/worker_evaluator.hpp"

namespace ak {
namespace {

/// The counters block of `bench --counters`: what limits the file, then the readings.
void print_counters(const Verdict& v) {
  if (!v.counters) return;
  const HardwareCounters& c = *v.counters;
  if (c.available()) std::printf("  limits      %s\n", diagnose(c, v.registers, v.spill_bytes).sentence().c_str());
  for (auto& line : counter_lines(c)) std::printf("  counters    %s\n", line.c_str());
  const CountersPhases& p = c.phases;
  if (c.seconds > 0)
    std::printf("  counters    the pass's %.3f s: buffers %.3f, setup %.3f, prepare %.3f, launch %.3f, check %.3f, "
                "read %.3f\n",
                c.seconds, p.buffers, p.setup, p.prepare, p.launch, p.check, p.read);
}

void print_verdict(const Verdict& v, const std::string& file, bool counters) {
  std::printf("%s (%s) on %s, %s, seed %llu\n", file.c_str(), v.kernel_type.c_str(), v.gpu.empty() ? "?" : v.gpu.c_str(),
              v.arch.c_str(), (unsigned long long)v.seed);
  for (auto& s : v.stages)
    std::printf("  %-20s %-4s %6.2f s  %s\n", s.name.c_str(), s.passed ? "ok" : "FAIL", s.seconds, s.detail.c_str());
  std::printf("result: %s (%.2f s)\n", correctness_name(v.correctness), v.total_seconds);
  if (!v.passed()) {
    std::printf("  %s\n", v.message.c_str());
    if (v.worst_index >= 0)
      std::printf("  at %s %s (%s inputs), element %lld: got %g, expected %g\n", v.failed_shape.c_str(),
                  v.failed_dtype.c_str(), v.failed_input.c_str(), (long long)v.worst_index, v.worst_got, v.worst_expected);
    if (!v.compile_log.empty()) std::printf("compile log:\n%s\n", v.compile_log.c_str());
  }
  if (v.timing) {
    const Timing& t = *v.timing;
    std::printf("  latency     %.2f us median at %s %s (p10 %.2f, p90 %.2f, spread %.1f%%, %d launches; CUDA events %.2f us)\n",
                t.median_us, v.shape.c_str(), v.dtype.c_str(), t.p10_us, t.p90_us, t.spread() * 100, t.samples,
                t.event_median_us);
    std::printf("  throughput  %.1f %s, %.1f%% of the measured peak %.0f %s\n", v.throughput, v.throughput_unit.c_str(),
                v.pct_peak * 100, v.peak_used, v.throughput_unit.c_str());
  }
  if (v.paired.pairs > 0)
    std::printf("  beside      the other file %.2f us in the same launches: ratio %.4f +- %.4f over %d pairs\n",
                v.paired.best_us, v.paired.ratio, v.paired.noise, v.paired.pairs);
  for (auto& n : v.notes) std::printf("  note: %s\n", n.c_str());
  if (v.passed()) {
    std::printf("  baseline    %.2f us (%s): speedup %.3fx", v.baseline_us, v.baseline_source.c_str(), v.speedup);
    if (v.starter_us > 0) std::printf("; starter %.2f us", v.starter_us);
    std::printf("\n  resources   %d registers, %d bytes spilled, %d threads x %d rows per block, peak VRAM %.0f MiB\n",
                v.registers, v.spill_bytes, v.block_threads, v.rows_per_block, v.peak_vram_mb);
    if (counters) print_counters(v);
  }
}

}  // namespace

int bench_command(const Args& args) {
  std::vector<std::string> files;
  std::string type, shape, dtype, device = "0", seed = "0", baseline, reps = "100", timeout = "60", beside, user_spec;
  bool json = false, counters = false, no_counters = false;
  ArgParser p("autokernel bench FILE.cu... --kernel TYPE|--spec TYPE.toml [--shape 8192x8192] [--dtype fp16] [--json] [--counters]",
              "Evaluates kernel files as the loop does, in one worker process: compile, the five\n"
              "correctness stages, then timing at the benchmark shape with roofline and speedup.\n"
              "FILE 'starter' evaluates the type's starter, a variant's name that variant (autokernel\n"
              "kernels lists them). --json prints one verdict per line.\n"
              "Exit 0 when every file PASSes, 1 on any failure, 2 on bad usage or no GPU.");
  p.positionals("FILE.cu", "kernel files, 'starter', or a variant's name", &files)
      .option("kernel", "TYPE", "the kernel type (autokernel kernels lists them)", &type)
      .option("spec", "TYPE.toml", "a user type's spec (docs/user-types.md): judged against its PyTorch reference", &user_spec)
      .option("shape", "RxC", "the shape to time (default: the type's benchmark shape)", &shape)
      .option("dtype", "DTYPE", "fp16, bf16 or fp32: the dtype to time (default fp16; a user type's first dtype)", &dtype)
      .option("baseline-us", "US", "the time to beat (default: the reference kernel's)", &baseline)
      .option("beside", "FILE.cu", "time each file beside this one, launch for launch (as the loop does)", &beside)
      .option("device", "N", "the GPU index (default 0)", &device)
      .option("seed", "N", "the seed of the random inputs (default: from the clock)", &seed)
      .option("repetitions", "N", "timed launches (default 100)", &reps)
      .option("stage-timeout", "S", "seconds a stage may take before TIMEOUT (default 60)", &timeout)
      .flag("json", "print the verdict as JSON (its counters included)", &json)
      .flag("counters", "print the hardware counters of one more launch: what limits the file, and why", &counters)
      .flag("no-counters", "skip the launch that reads the hardware counters", &no_counters);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (auto s = use_user_spec(user_spec, type); !s) return std::fprintf(stderr, "autokernel bench: %s\n", s.error().message.c_str()), kExitUsage;
  if (type.empty()) return std::fprintf(stderr, "autokernel bench: --kernel TYPE or --spec TYPE.toml is required\n"), kExitUsage;
  const UserTypeSpec* user = find_user_type(type);
  if (dtype.empty()) dtype = user && !user->dtypes.empty() ? dtype_name(user->dtypes.front()) : "fp16";
  auto spec = spec_for(type);
  if (!spec) return std::fprintf(stderr, "%s\n", spec.error().message.c_str()), kExitUsage;
  std::vector<std::string> sources;
  for (auto& f : files) {
    auto source = read_kernel_file(f, **spec);
    if (!source) return std::fprintf(stderr, "%s\n", source.error().message.c_str()), kExitUsage;
    sources.push_back(*source);
  }
  // The shape is read in the dimensions of the contract version the (first) file follows.
  if (!sources.empty()) {
    spec = spec_for_file(type, sources.front());
    if (!spec) return std::fprintf(stderr, "%s\n", spec.error().message.c_str()), kExitUsage;
  }

  EvalRequest req;
  req.kernel_type = type;
  if (user) req.user_type = user->to_json();
  if (!beside.empty()) {
    auto best = read_kernel_file(beside, **spec);
    if (!best) return std::fprintf(stderr, "%s\n", best.error().message.c_str()), kExitUsage;
    req.best_source = *best;
  }
  req.dtype = dtype;
  if (counters && no_counters)
    return std::fprintf(stderr, "autokernel bench: --counters and --no-counters ask for opposite things: give one\n"), kExitUsage;
  req.counters = !no_counters;
  try {
    req.seed = std::stoull(seed);
    req.repetitions = std::stoi(reps);
    if (!baseline.empty()) req.baseline_us = std::stod(baseline);
    if (!shape.empty()) {
      auto s = parse_shape(shape);
      if (!s || s->size() != (*spec)->shape_names.size()) throw std::invalid_argument("shape");
      req.shape = *s;
    }
    if (!parse_dtype(dtype)) throw std::invalid_argument("dtype");
  } catch (const std::exception&) {
    std::fprintf(stderr, "autokernel bench: bad value (expected --shape like %s with %zu dimensions (%s), --dtype fp16|bf16|fp32, numbers for --seed, --repetitions, --baseline-us)\n",
                 shape_str((*spec)->bench_shape).c_str(), (*spec)->shape_names.size(), (*spec)->shape_help().c_str());
    return kExitUsage;
  }
  WorkerEvaluator::Options opt;
  opt.device = std::atoi(device.c_str());
  opt.stage_timeout_s = std::atof(timeout.c_str());
  WorkerEvaluator evaluator(opt);
  bool all_passed = true;
  for (size_t i = 0; i < files.size(); ++i) {
    req.source = sources[i];
    auto v = evaluator.evaluate(req);
    if (!v) {
      std::fprintf(stderr, "autokernel bench: %s\n", v.error().message.c_str());
      return kExitUsage;
    }
    nlohmann::json j = *v;
    j["file"] = files[i];
    if (json) std::printf("%s\n", j.dump().c_str());
    else print_verdict(*v, files[i], counters);
    std::fflush(stdout);
    all_passed = all_passed && v->passed();
  }
  return all_passed ? kExitOk : kExitFailure;
}

}  // namespace ak
