#pragma once
/// The decisions of one evaluation, apart from the GPU work they steer, so that each is a pure
/// function a test can check on its own: whether a request can be judged at all and whose fault
/// it is when not, what a compile tells the verdict, what a timing that broke is blamed on, which
/// baselines are timed and which one the speedup is against, and whether the hardware counters
/// are read.
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "harness/judging/benchmark.hpp"
#include "harness/judging/evaluation_seeds.hpp"
#include "harness/judging/stages.hpp"
#include "harness/judging/verdict.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// Why a file of `spec`'s contract cannot be judged at `shape` beside `best_source`, or "": the
/// shape has the version's dimensions, and the file keeps the version of the kernel's kept file
/// (a version changes the arguments, so the two could not be timed on one set of inputs).
std::string contract_mismatch(const KernelSpec& spec, const std::string& best_source, const Shape& shape);

/// The verdict of a request refused before its compile. A refusal of the file itself (no version
/// of its type's contract fits it, or not at this shape) is the candidate's COMPILE_ERROR at the
/// compile stage; any other (an unknown dtype, a type nobody registered) only says why.
void refuse_request(Verdict& v, const std::string& message, bool file_at_fault);

/// The seeds the evaluation draws from, in the verdict; ones derived from a given seed (`--seed`,
/// `given`) say that its choices could be known in advance.
void record_seeds(Verdict& v, const EvaluationSeeds& seeds, uint64_t given);

/// The compile stage failed after `seconds`: COMPILE_ERROR with the message and the compiler's log.
void fail_compile(Verdict& v, const std::string& message, const std::string& log, double seconds);

/// The ptxas statistics of the entry point of the timed dtype (`functions` in `dtypes`' order);
/// registers stay -1 when the log carried none.
void record_compile_statistics(Verdict& v, const std::vector<DType>& dtypes, const std::vector<FunctionInfo>& functions,
                               DType timed);
/// The driver's account of the loaded entry point, for a log without ptxas statistics.
void record_driver_statistics(Verdict& v, const FunctionInfo& loaded);

/// What a timing that could not finish is blamed on: an error that lost the CUDA context is a
/// CRASH, any other a FAIL; an error of the harness's own (Error::harness) stays the harness's.
StageFailure timing_error_failure(const Error& e, bool sticky);

/// A current best that failed its own checks beside the candidate: the pairing says so, and so
/// does a note, but the candidate is judged on its own launches.
void note_failing_best(const std::vector<std::optional<StageFailure>>& failures, PairedTiming& paired, Verdict& v);

/// The baselines of a built-in type, each timed at the timed shape after the candidate passed.
enum class BaselineKind { Cublas, Reference, Starter };
/// In order: cuBLAS for a type whose baseline it is (a sampled reference computes only some rows,
/// so those types are not timed against it), else the reference kernel; then the type's starter
/// when the request asks for it. None of the first when the request carries the baseline time
/// (`baseline_carried`): the loop sends the time its first verdict measured with every later
/// candidate, and each worker timing the library again at every shape it meets is work that no
/// one reads (a few percent of four GPUs' time).
std::vector<BaselineKind> baselines_to_time(Baseline baseline, bool time_starter, bool baseline_carried);
/// "cuBLAS", "reference" or "starter".
std::string baseline_name(BaselineKind k);
/// The verdict's field that holds a baseline's median.
double& baseline_field(Verdict& v, BaselineKind k);

/// The speedup and what it is against: the configured baseline when there is one, else the
/// measured one (`measured_source`), "unavailable" when none was measured (speedup 0).
void settle_speedup(Verdict& v, std::optional<double> configured_us, double measured_us,
                    const std::string& measured_source, double median_us);

/// Why a passed candidate's hardware counters are not read, or nullopt when they are (built-in and
/// user types alike): not when the config turns them off, not when the context was lost timing
/// the baselines, and not when its pairing with the best does not show it faster beyond the noise
/// (unless `for_all`): such a candidate is reverted whatever its counters say.
std::optional<std::string> counters_skipped(bool wanted, bool context_lost, const PairedTiming& paired, bool for_all);

}  // namespace ak
