#include "harness/judging/builtin_timing.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "harness/gpu/cupti_timer.hpp"
#include "harness/gpu/driver_call_times.hpp"
#include "harness/judging/evaluation_seeds.hpp"
#include "harness/judging/reference_outputs.hpp"
#include "harness/module/module_memory.hpp"

namespace ak {
namespace {

/// `count` distinct pairs among the timed ones, drawn from `seed`, in increasing order.
std::vector<int> pick_checked(int first, int count, int available, uint64_t seed) {
  std::vector<int> all(static_cast<size_t>(available));
  for (int i = 0; i < available; ++i) all[size_t(i)] = first + i;
  for (int i = available - 1; i > 0; --i)
    std::swap(all[size_t(i)], all[size_t(mix_seed(seed + uint64_t(i)) % uint64_t(i + 1))]);
  all.resize(size_t(std::min(count, available)));
  std::sort(all.begin(), all.end());
  return all;
}

/// A device buffer set to one byte value, on allocation and whenever asked: logs and scratch
/// that a kernel could read hold the same bytes whatever the harness has done so far.
Result<DeviceBuffer> filled(GpuContext& gpu, size_t bytes, unsigned char value) {
  auto b = gpu.alloc(std::max<size_t>(bytes, 8));
  if (!b) return b.error();
  if (auto s = cu_check(gpu.driver().cuMemsetD8(b->ptr(), value, b->bytes()), "clearing a harness buffer"); !s)
    return s.error();
  return b;
}

/// One judged timing in progress: the buffers, the logs and the launches of every pair.
class BuiltinTimingSession {
 public:
  BuiltinTimingSession(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks,
                       const KernelSpec& spec, const Shape& shape, DType d,
                       const std::vector<const LaunchableKernel*>& kernels, const LaunchableKernel* reference,
                       const BuiltinTimingPlan& plan)
      : gpu_(gpu), drv_(gpu.driver()), inputs_(inputs), checks_(checks), spec_(spec), shape_(shape), d_(d),
        kernels_(kernels), reference_(reference), plan_(plan), n_(int(kernels.size())) {}

  Result<BuiltinTiming> run();
  /// The last error lost the CUDA context.
  bool sticky() const { return sticky_; }

 private:
  /// The launches timed, in launch order: which kernel ran, between which events.
  struct TimedLaunches {
    std::vector<CudaEvent> starts, ends;
    std::vector<int> kernel;
  };
  /// The entry point of each kernel timed, as CUPTI names their launches.
  std::vector<std::string> timed_names() const {
    std::vector<std::string> names;
    for (auto* k : kernels_) names.push_back(k->lowered_name(d_));
    return names;
  }
  uint64_t inputs_of(int pair) const { return mix_seed(plan_.input_seed ^ (uint64_t(pair) * 0xd1342543de82ef95ull)); }
  int kernel_at(int pair, int i) const {
    return n_ == 1 ? 0 : ((pair + int(plan_.choice_seed & 1)) % 2 == 0 ? i : 1 - i);
  }
  std::string launch_name(int pair) const {
    return pair < warm_ ? "warm-up launch " + std::to_string(pair + 1)
                        : "timed launch " + std::to_string(pair - warm_ + 1) + " of " + std::to_string(reps_);
  }
  // The steps of run(), in order.
  Status allocate();
  /// The first pair, both kernels: its duration sizes the plan (warm_, reps_, pairs_).
  Status size_the_plan();
  /// Fresh logs for `slots` launches, every slot's memory check unset and counters zero.
  Status open_logs(int slots);
  /// Per kernel, which of its timed launches are judged (EvaluationSeeds::timing_choices).
  void choose_checked_launches();
  /// Every pair after the first: warm-up, then CUPTI on and the timed launches, judging the chosen
  /// ones as they come; stops at the candidate's first failure.
  Status launch_pairs(TimedLaunches& timed, BuiltinTiming& out);
  /// Kernel k's launch of `pair` and, when it is one of its chosen ones, its judging.
  Status launch_and_judge(int pair, int k, TimedLaunches& timed, BuiltinTiming& out);
  /// CUPTI off, and the durations of the timed launches into the timings.
  Status collect_timings(const TimedLaunches& timed, BuiltinTiming& out);
  /// The logs of every kernel without a failure yet.
  Status read_all_logs(BuiltinTiming& out);

  Status prepare(int pair);
  /// Launches kernel k for `pair` (between the events `timed` brackets, when given) and enqueues
  /// its checks into log slot `slot`.
  Result<CUresult> launch(int pair, int k, size_t slot, std::pair<CudaEvent*, CudaEvent*> timed = {nullptr, nullptr});
  /// Judges kernel k's launch of `pair` now, against the reference for that pair's inputs.
  Result<std::optional<StageFailure>> judge(int pair, int k, CUresult& cuda_error);
  /// After the launches: the first slot of kernel k whose counters or module memory were left set.
  Result<std::optional<StageFailure>> read_logs(int k);
  StageFailure failure(const std::string& msg) const;
  /// A CUDA error `r` of the launches at `when`; sticky_ when it lost the context.
  Error cuda_failure(CUresult r, const std::string& when);

  GpuContext& gpu_;
  const CudaDriver& drv_;
  const DeviceInputs& inputs_;
  const DeviceChecks& checks_;
  const KernelSpec& spec_;
  const Shape& shape_;
  const DType d_;
  const std::vector<const LaunchableKernel*>& kernels_;
  const LaunchableKernel* reference_;
  const BuiltinTimingPlan& plan_;
  const int n_;
  int warm_ = 0, reps_ = 0, pairs_ = 0;

  std::optional<RunSet> set_, regenerated_;   ///< the launches' buffers; the inputs drawn again to check them
  DeviceBuffer flush_, counter_log_, memory_log_;
  size_t counter_bytes_ = 0;
  std::vector<std::vector<int>> checked_;     ///< per kernel, the timed pairs judged
  std::vector<std::pair<int, int>> slots_;    ///< per log slot: pair, kernel
  bool sticky_ = false;
};

StageFailure BuiltinTimingSession::failure(const std::string& msg) const {
  StageFailure f;
  f.message = msg;
  f.at = {shape_, d_, Recipe::Normal, plan_.input_seed};
  return f;
}

Status BuiltinTimingSession::allocate() {
  auto set = allocate_run_set(gpu_, spec_, shape_, d_);
  if (!set) return set.error();
  set_ = std::move(*set);
  for (auto& c : set_->counters) counter_bytes_ += c.bytes();
  // Writing a buffer twice the size of L2 before each launch evicts the previous launch's data;
  // always the same bytes, so that it says nothing of how many launches came before.
  auto flush = filled(gpu_, std::max<size_t>(gpu_.info().l2_bytes * 2, 64 << 20), 0);
  if (!flush) return flush.error();
  flush_ = std::move(*flush);
  if (plan_.checked_launches > 0) {
    auto again = allocate_run_set(gpu_, spec_, shape_, d_);
    if (!again) return again.error();
    regenerated_ = std::move(*again);
    for (auto& b : regenerated_->inputs)
      if (auto s = cu_check(drv_.cuMemsetD8(b.ptr(), kPoisonByte, b.bytes()), "clearing a harness buffer"); !s) return s;
  }
  gpu_.release_kept();
  return ok();
}

Status BuiltinTimingSession::prepare(int pair) {
  if (auto s = inputs_.fill(spec_, shape_, d_, *set_, inputs_of(pair)); !s) return s;
  if (auto s = poison_writable(gpu_, *set_); !s) return s;
  return cu_check(drv_.cuMemsetD8Async(flush_.ptr(), 0, flush_.bytes(), nullptr), "flushing the L2");
}

Result<CUresult> BuiltinTimingSession::launch(int pair, int k, size_t slot, std::pair<CudaEvent*, CudaEvent*> timed) {
  const LaunchableKernel& kernel = *kernels_[size_t(k)];
  if (auto s = prepare(pair); !s) return s.error();
  if (CUresult r = kernel.restore_module_memory(); r != CUDA_SUCCESS) return r;
  if (auto s = kernel.before_launch(checks_, shape_, d_); !s) return s.error();
  if (timed.first) drv_.cuEventRecord(timed.first->e, nullptr);
  const CUresult r = kernel.launch(spec_, d_, shape_, set_->view(), nullptr, false);
  if (timed.second) drv_.cuEventRecord(timed.second->e, nullptr);
  if (r != CUDA_SUCCESS) return r;
  if (auto s = kernels_[size_t(k)]->check_module_memory(checks_, memory_log_.ptr() + slot * sizeof(uint64_t)); !s)
    return s.error();
  size_t off = slot * counter_bytes_;
  for (auto& c : set_->counters) {
    if (auto s = cu_check(drv_.cuMemcpyDtoDAsync(counter_log_.ptr() + off, c.ptr(), c.bytes(), nullptr), "logging the counters"); !s)
      return s.error();
    off += c.bytes();
  }
  slots_.push_back({pair, k});
  return CUDA_SUCCESS;
}

Result<std::optional<StageFailure>> BuiltinTimingSession::judge(int pair, int k, CUresult& cuda_error) {
  TimedCall timed("timing: a checked launch judged");
  const std::string which = launch_name(pair) + " on " + shape_str(shape_) + " " + dtype_name(d_);
  cuda_error = drv_.cuCtxSynchronize();
  if (cuda_error != CUDA_SUCCESS) return error("the " + which + " failed: " + cu_error_text(cuda_error));
  if (auto s = inputs_.fill(spec_, shape_, d_, *regenerated_, inputs_of(pair)); !s) return s.error();
  std::optional<StageFailure> found;
  for (size_t i = 0; i < set_->inputs.size() && !found; ++i) {
    auto differ = checks_.differing_bytes(set_->inputs[i], regenerated_->inputs[i], set_->inputs[i].bytes());
    if (!differ) return differ.error();
    if (*differ) found = failure("the kernel wrote into its input during " + which + ": inputs are read-only");
  }
  if (!found) {
    const uint64_t rows_seed = mix_seed(plan_.choice_seed ^ (uint64_t(pair) << 1 | uint64_t(k)));
    auto expected = reference_outputs(gpu_, checks_, spec_, *reference_, set_->view(), shape_, d_, rows_seed, cuda_error);
    if (!expected) return expected.error();
    for (size_t i = 0; i < set_->outputs.size() && !found; ++i) {
      auto cmp = expected->judge(i, set_->outputs[i], d_, spec_.tolerance_for(d_, shape_));
      if (!cmp) return cmp.error();
      if (!cmp->pass()) {
        found = failure("wrong output during timing (" + which + "): " + cmp->describe() + expected->sampled_note() +
                        ": the kernel behaves differently when it is timed");
        found->comparison = *cmp;
      }
    }
    if (auto s = expected->wipe(); !s) return s.error();
  }
  for (auto& b : regenerated_->inputs)
    if (auto s = cu_check(drv_.cuMemsetD8(b.ptr(), kPoisonByte, b.bytes()), "wiping the drawn-again inputs"); !s)
      return s.error();
  return found;
}

Result<std::optional<StageFailure>> BuiltinTimingSession::read_logs(int k) {
  std::vector<uint64_t> memory(slots_.size());
  if (auto s = gpu_.download(memory.data(), memory_log_, memory.size() * sizeof(uint64_t)); !s) return s.error();
  std::vector<uint32_t> counters(counter_bytes_ * slots_.size() / sizeof(uint32_t));
  if (counter_bytes_ > 0)
    if (auto s = gpu_.download(counters.data(), counter_log_, counters.size() * sizeof(uint32_t)); !s) return s.error();
  const std::string at = " (on " + shape_str(shape_) + " " + dtype_name(d_) + ")";
  for (size_t slot = 0; slot < slots_.size(); ++slot) {
    if (slots_[slot].second != k) continue;
    const std::string when = launch_name(slots_[slot].first);
    if (std::string changed = kernels_[size_t(k)]->module_memory_change(memory[slot]); !changed.empty())
      return std::optional(failure(changed + " after " + when + at + ": a launch may keep nothing for the next"));
    const size_t per_slot = counter_bytes_ / sizeof(uint32_t);
    if (per_slot > 0)
      if (std::string left = first_counter_set(counters.data() + slot * per_slot, per_slot, when); !left.empty())
        return std::optional(failure(left + at));
  }
  return std::optional<StageFailure>();
}

Error BuiltinTimingSession::cuda_failure(CUresult r, const std::string& when) {
  sticky_ = cu_error_is_sticky(r);
  return error(when + ": " + cu_error_text(r));
}

Status BuiltinTimingSession::open_logs(int slots) {
  slots_.clear();
  auto log = filled(gpu_, sizeof(uint64_t) * size_t(slots), 0xff);
  auto counters = filled(gpu_, counter_bytes_ * size_t(slots), 0);
  if (!log || !counters) return !log ? log.error() : counters.error();
  memory_log_ = std::move(*log);
  counter_log_ = std::move(*counters);
  return ok();
}

Status BuiltinTimingSession::size_the_plan() {
  // A slow kernel (a reference attention takes a tenth of a second) gets fewer launches so one
  // timing stays within seconds, never below 10. The pair's logs are read before the plan's exist.
  if (auto s = open_logs(n_); !s) return s;
  CudaEvent w0(drv_), w1(drv_);
  drv_.cuEventRecord(w0.e, nullptr);
  for (int i = 0; i < n_; ++i) {
    auto r = launch(0, kernel_at(0, i), size_t(i));
    if (!r) return r.error();
    if (*r != CUDA_SUCCESS) return cuda_failure(*r, "warm-up launch failed");
  }
  drv_.cuEventRecord(w1.e, nullptr);
  if (CUresult r = drv_.cuCtxSynchronize(); r != CUDA_SUCCESS) return cuda_failure(r, "warm-up failed");
  const BenchmarkPlan sized = fit_plan(plan_.launches, elapsed_us(w0, w1) / 1000.0 / n_);
  warm_ = std::max(1, sized.warmup), reps_ = sized.repetitions, pairs_ = warm_ + reps_;
  return ok();
}

void BuiltinTimingSession::choose_checked_launches() {
  for (int k = 0; k < n_; ++k)
    checked_.push_back(pick_checked(warm_, plan_.checked_launches, reps_, mix_seed(plan_.choice_seed + uint64_t(k) + 1)));
}

Status BuiltinTimingSession::launch_and_judge(int pair, int k, TimedLaunches& timed_launches, BuiltinTiming& out) {
  const bool timed = pair >= warm_;
  if (timed) timed_launches.starts.emplace_back(drv_), timed_launches.ends.emplace_back(drv_);
  auto r = launch(pair, k, slots_.size(),
                  timed ? std::pair{&timed_launches.starts.back(), &timed_launches.ends.back()}
                        : std::pair<CudaEvent*, CudaEvent*>{});
  if (!r || *r != CUDA_SUCCESS) {
    if (timed) (void)CuptiKernelTimer::stop(timed_names(), 0);
    if (!r) return r.error();
    return cuda_failure(*r, std::string(timed ? "timed" : "warm-up") + " launch failed");
  }
  if (timed) timed_launches.kernel.push_back(k);
  const auto& mine = checked_[size_t(k)];
  if (!timed || out.failures[size_t(k)] || !std::binary_search(mine.begin(), mine.end(), pair)) return ok();
  CUresult cuda_error = CUDA_SUCCESS;
  auto judged = judge(pair, k, cuda_error);
  if (!judged) {
    (void)CuptiKernelTimer::stop(timed_names(), 0);
    return cuda_error != CUDA_SUCCESS ? cuda_failure(cuda_error, judged.error().message) : judged.error();
  }
  if (*judged) out.failures[size_t(k)] = *judged;
  if (out.failures[0]) (void)CuptiKernelTimer::stop(timed_names(), 0);
  return ok();
}

Status BuiltinTimingSession::launch_pairs(TimedLaunches& timed, BuiltinTiming& out) {
  timed.starts.reserve(size_t(reps_ * n_));
  timed.ends.reserve(size_t(reps_ * n_));
  for (int pair = 1; pair < pairs_; ++pair) {
    if (pair == warm_) {
      if (CUresult r = drv_.cuCtxSynchronize(); r != CUDA_SUCCESS) return cuda_failure(r, "warm-up failed");
      if (auto s = CuptiKernelTimer::start(); !s) return s;
    }
    for (int i = 0; i < n_; ++i) {
      if (auto s = launch_and_judge(pair, kernel_at(pair, i), timed, out); !s) return s;
      if (out.failures[0]) return ok();  // the candidate failed: the rest would time nothing it keeps
    }
  }
  return ok();
}

Status BuiltinTimingSession::collect_timings(const TimedLaunches& timed, BuiltinTiming& out) {
  CUresult r = drv_.cuCtxSynchronize();
  auto cupti = CuptiKernelTimer::stop(timed_names(), size_t(reps_ * n_));
  if (r != CUDA_SUCCESS) return cuda_failure(r, "timed launches failed");
  if (!cupti) return cupti.error();
  std::vector<double> event_us;
  for (size_t i = 0; i < timed.kernel.size(); ++i) event_us.push_back(elapsed_us(timed.starts[i], timed.ends[i]));
  WindowTimings w = window_timings(n_, timed.kernel, event_us, *cupti, CuptiKernelTimer::last_shortfall(),
                                   kernels_[0]->lowered_name(d_));
  out.timings = std::move(w.timings);
  out.paired = w.paired;
  return ok();
}

Status BuiltinTimingSession::read_all_logs(BuiltinTiming& out) {
  for (int k = 0; k < n_; ++k) {
    if (out.failures[size_t(k)]) continue;
    auto f = read_logs(k);
    if (!f) return f.error();
    out.failures[size_t(k)] = *f;
  }
  return ok();
}

Result<BuiltinTiming> BuiltinTimingSession::run() {
  // The phases are timed beside the driver's calls (AUTOKERNEL_DRIVER_TIMES): which of them waits
  // when other GPUs of the box are busy.
  {
    TimedCall timed("timing: buffers");
    if (auto s = allocate(); !s) return s.error();
  }
  {
    TimedCall timed("timing: sizing launches");
    if (auto s = size_the_plan(); !s) return s.error();
  }
  BuiltinTiming out;
  out.bytes = set_->bytes;
  out.failures.resize(size_t(n_));
  if (auto s = read_all_logs(out); !s) return s.error();
  if (out.failures[0]) return out;
  if (auto s = open_logs(pairs_ * n_); !s) return s.error();
  choose_checked_launches();
  TimedLaunches timed;
  {
    TimedCall phase("timing: launches and checked launches");
    if (auto s = launch_pairs(timed, out); !s) return s.error();
  }
  if (out.failures[0]) return out;
  {
    TimedCall phase("timing: records collected");
    if (auto s = collect_timings(timed, out); !s) return s.error();
  }
  if (auto s = read_all_logs(out); !s) return s.error();
  return out;
}

}  // namespace

Result<BuiltinTiming> builtin_timing(GpuContext& gpu, const DeviceInputs& inputs, const DeviceChecks& checks,
                                   const KernelSpec& spec, const Shape& shape, DType d,
                                   const std::vector<const LaunchableKernel*>& kernels,
                                   const LaunchableKernel* reference, const BuiltinTimingPlan& plan, bool& sticky) {
  sticky = false;
  if (kernels.empty() || kernels.size() > 2) return error("builtin_timing takes one or two kernels");
  if (plan.checked_launches > 0 && !reference) return error("checked launches need the reference");
  BuiltinTimingSession session(gpu, inputs, checks, spec, shape, d, kernels, reference, plan);
  auto timing = session.run();
  sticky = session.sticky();
  return timing;
}

}  // namespace ak
