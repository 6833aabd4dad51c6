#pragma once
/// The judged timing of a user type: builtin_timing's rules (harness/judging/builtin_timing.hpp) with the
/// reference process drawing the inputs and judging the checked launches. Before every launch,
/// warm-up ones included, the process draws fresh inputs with get_inputs() into the pool and
/// poisons the outputs; the module's memory is reset and the L2 flushed; after it the module's
/// memory is checked. The checked launches are drawn from the CSPRNG seed; with two kernels they
/// alternate launch by launch in an order drawn at random; the durations are CUPTI's, the
/// timing their median.
///
/// Why it is not builtin_timing with a seam: builtin_timing draws every launch's inputs on the GPU
/// from a seed and draws them again to judge a launch, so a pair shares its inputs and the
/// launches queue back to back. The reference process keeps its seeds and its inputs to itself
/// and shares one pool with the worker, so here every launch waits for its own prepare, the
/// worker synchronises after each launch (the next prepare overwrites the pool), and a launch is
/// judged by the process for the inputs it last drew. A seam that covered both would leave
/// neither readable.
#include <optional>
#include <vector>

#include "harness/judging/benchmark.hpp"
#include "harness/judging/stages.hpp"
#include "harness/module/device_checks.hpp"
#include "harness/module/kernel_launch.hpp"
#include "harness/user_types/user_reference.hpp"

namespace ak {

struct UserTimingPlan {
  BenchmarkPlan launches;
  int checked_launches = 4;   ///< of each kernel's timed launches
  uint64_t choice_seed = 1;   ///< which launches are checked, who goes first (EvaluationSeeds::timing_choices)
};

struct UserTiming {
  std::vector<Timing> timings;                        ///< one per kernel, in the order given
  PairedTiming paired;                                ///< with two kernels: the first against the second
  std::vector<std::optional<StageFailure>> failures;  ///< per kernel: what its checks found
  size_t bytes = 0;                                   ///< the pool's bytes at this shape
  bool kernelbench_pass = true;                       ///< the first kernel's checks within KernelBench's tolerance
};

/// Times `kernels` (the candidate, and the best when given) at one shape. An Error is a CUDA
/// failure (with `sticky` set when the context is gone) or the harness's own (Error::harness: the
/// reference process, an allocation); a wrong checked output or module memory left changed is that
/// kernel's entry in `failures`.
Result<UserTiming> user_timing(GpuContext& gpu, const DeviceChecks& checks, const KernelSpec& spec, UserReference& ref,
                               const Shape& shape, DType d, const std::vector<const LaunchableKernel*>& kernels,
                               const UserTimingPlan& plan, bool& sticky);

/// `count` distinct launches among `available` timed ones (numbered from `first`), drawn from
/// `seed`, in increasing order.
std::vector<int> pick_checked_launches(int first, int count, int available, uint64_t seed);

}  // namespace ak
