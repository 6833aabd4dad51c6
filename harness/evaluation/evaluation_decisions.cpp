#include "harness/evaluation/evaluation_decisions.hpp"

#include "common/format.hpp"
#include "kernels_cuda/contract_version.hpp"

namespace ak {

std::string contract_mismatch(const KernelSpec& spec, const std::string& best_source, const Shape& shape) {
  if (shape.size() != spec.shape_names.size())
    return "the shape " + shape_str(shape) + " has " + std::to_string(shape.size()) + " dimensions; version " +
           std::to_string(spec.contract_version) + " of the " + spec.type + " contract takes " +
           std::to_string(spec.shape_names.size()) + " (" + spec.shape_help() + "): give a shape of that version";
  if (std::string why = spec.shape_error ? spec.shape_error(shape) : ""; !why.empty())
    return "the shape " + shape_str(shape) + " is not one of the " + spec.type + " contract's: " + why;
  if (std::string why = spec.zero_dimension_error(shape); !why.empty())
    return "the shape " + shape_str(shape) + " is not one of the " + spec.type + " contract's: " + why;
  if (best_source.empty()) return "";
  const int best = declared_contract_version(best_source).value_or(spec.contract_version);
  if (best == spec.contract_version) return "";
  return "the file declares version " + std::to_string(spec.contract_version) + " of the " + spec.type +
         " contract and the kernel's kept file version " + std::to_string(best) +
         ": a kernel keeps the version it started with (write the file for version " + std::to_string(best) +
         ", or start a new run for version " + std::to_string(spec.contract_version) + ")";
}

void refuse_request(Verdict& v, const std::string& message, bool file_at_fault) {
  v.message = message;
  if (!file_at_fault) return;
  v.correctness = Correctness::CompileError;
  v.failed_stage = "compile";
}

void record_seeds(Verdict& v, const EvaluationSeeds& seeds, uint64_t given) {
  v.seed = seeds.stage_inputs;
  v.fixed_seed = seeds.fixed;
  if (seeds.fixed)
    v.notes.push_back("made with the fixed seed " + std::to_string(given) +
                      ": its inputs and checked launches could be known in advance; the loop never uses one");
}

void fail_compile(Verdict& v, const std::string& message, const std::string& log, double seconds) {
  v.correctness = Correctness::CompileError;
  v.message = message;
  v.compile_log = log;
  v.failed_stage = "compile";
  v.stages.push_back({"compile", false, seconds, message});
}

void record_compile_statistics(Verdict& v, const std::vector<DType>& dtypes, const std::vector<FunctionInfo>& functions,
                               DType timed) {
  for (size_t i = 0; i < dtypes.size() && i < functions.size(); ++i)
    if (dtypes[i] == timed) {
      v.registers = functions[i].registers;
      v.spill_bytes = functions[i].spill_stores + functions[i].spill_loads;
      v.static_smem_bytes = functions[i].static_smem_bytes;
    }
}

void record_driver_statistics(Verdict& v, const FunctionInfo& loaded) {
  v.registers = loaded.registers;
  v.spill_bytes = loaded.stack_bytes;
  v.static_smem_bytes = loaded.static_smem_bytes;
}

StageFailure timing_error_failure(const Error& e, bool sticky) {
  StageFailure f;
  f.correctness = sticky ? Correctness::Crash : Correctness::Fail;
  f.message = e.message;
  f.harness = e.harness;
  return f;
}

void note_failing_best(const std::vector<std::optional<StageFailure>>& failures, PairedTiming& paired, Verdict& v) {
  if (failures.size() != 2 || !failures[1]) return;
  paired.best_failure = failures[1]->message;
  v.notes.push_back("the current best failed its own checks beside this candidate: " + failures[1]->message);
}

std::vector<BaselineKind> baselines_to_time(Baseline baseline, bool time_starter, bool baseline_carried) {
  std::vector<BaselineKind> out;
  if (!baseline_carried) out.push_back(baseline == Baseline::Cublas ? BaselineKind::Cublas : BaselineKind::Reference);
  if (time_starter) out.push_back(BaselineKind::Starter);
  return out;
}

std::string baseline_name(BaselineKind k) {
  switch (k) {
    case BaselineKind::Cublas: return "cuBLAS";
    case BaselineKind::Reference: return "reference";
    case BaselineKind::Starter: return "starter";
  }
  return "";
}

double& baseline_field(Verdict& v, BaselineKind k) {
  switch (k) {
    case BaselineKind::Cublas: return v.cublas_us;
    case BaselineKind::Reference: return v.reference_us;
    case BaselineKind::Starter: break;
  }
  return v.starter_us;
}

void settle_speedup(Verdict& v, std::optional<double> configured_us, double measured_us,
                    const std::string& measured_source, double median_us) {
  v.baseline_us = configured_us.value_or(measured_us);
  v.baseline_source = configured_us ? "config" : measured_us <= 0 ? "unavailable" : measured_source;
  v.speedup = v.baseline_us > 0 ? v.baseline_us / median_us : 0;
}

std::optional<std::string> counters_skipped(bool wanted, bool context_lost, const PairedTiming& paired, bool for_all) {
  if (!wanted) return "turned off in the config ([harness] counters = false)";
  if (context_lost) return "not read: the worker's CUDA context was lost timing the baseline";
  if (!for_all && paired.pairs > 0 && paired.best_failure.empty() && paired.ratio >= 1 - paired.noise)
    return format_numbers("not read: %.3fx the best's time in the pairing (+- %.3f), not faster, so it is reverted "
                          "whatever they say ([harness] counters_for_all = true reads them)", paired.ratio, paired.noise);
  return std::nullopt;
}

}  // namespace ak
