#include "harness/user_types/user_timing.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "harness/gpu/cupti_timer.hpp"
#include "harness/judging/evaluation_seeds.hpp"

namespace ak {
namespace {

/// One user timing in progress.
class UserTimingSession {
 public:
  UserTimingSession(GpuContext& gpu, const DeviceChecks& checks, const KernelSpec& spec, UserReference& ref, const Shape& shape,
          DType d, const std::vector<const LaunchableKernel*>& kernels, const UserTimingPlan& plan)
      : gpu_(gpu), drv_(gpu.driver()), checks_(checks), spec_(spec), ref_(ref), shape_(shape), d_(d), kernels_(kernels),
        plan_(plan), n_(int(kernels.size())) {}

  Result<UserTiming> run(bool& sticky);

 private:
  int kernel_at(int pair, int i) const { return n_ == 1 ? 0 : ((pair + int(plan_.choice_seed & 1)) % 2 == 0 ? i : 1 - i); }
  std::string launch_name(int pair) const {
    return (pair < warm_ ? "warm-up launch " + std::to_string(pair + 1)
                         : "timed launch " + std::to_string(pair - warm_ + 1) + " of " + std::to_string(reps_)) +
           " on " + shape_str(shape_) + " " + dtype_name(d_);
  }
  StageFailure failure(const std::string& msg) const {
    StageFailure f;
    f.message = msg;
    f.at = {shape_, d_, Recipe::Normal, 0, 0};
    return f;
  }
  /// Prepares, launches kernel k (between `timed`'s events when given) and waits for it. An Error
  /// with `cuda` set is the kernel's CUDA error; without, the reference process's or the harness's.
  Result<std::optional<StageFailure>> launch(int pair, int k, bool judge, std::pair<CudaEvent*, CudaEvent*> timed, CUresult& cuda);

  GpuContext& gpu_;
  const CudaDriver& drv_;
  const DeviceChecks& checks_;
  const KernelSpec& spec_;
  UserReference& ref_;
  const Shape& shape_;
  const DType d_;
  const std::vector<const LaunchableKernel*>& kernels_;
  const UserTimingPlan& plan_;
  const int n_;
  int warm_ = 0, reps_ = 0;
  DeviceBuffer flush_, slot_;
  size_t bytes_ = 0;
  bool kernelbench_pass_ = true;
};

Result<std::optional<StageFailure>> UserTimingSession::launch(int pair, int k, bool judge, std::pair<CudaEvent*, CudaEvent*> timed,
                                                    CUresult& cuda) {
  const LaunchableKernel& kernel = *kernels_[size_t(k)];
  auto run = ref_.prepare(shape_, d_);
  if (!run) return error("the reference process failed to draw the inputs: ", run.error());
  bytes_ = std::max(bytes_, run->bytes);
  // Always the same bytes into the flush buffer and the slot: they say nothing of how many
  // launches came before, nor which are judged.
  if (auto s = cu_check(drv_.cuMemsetD8(slot_.ptr(), 0xff, slot_.bytes()), "clearing a check's slot"); !s) return s.error();
  if ((cuda = kernel.restore_module_memory()) != CUDA_SUCCESS) return error("resetting the module's memory failed");
  if (auto s = kernel.before_launch(checks_, shape_, d_); !s) return s.error();
  if (auto s = cu_check(drv_.cuMemsetD8Async(flush_.ptr(), 0, flush_.bytes(), nullptr), "flushing the L2"); !s) return s.error();
  if (timed.first) drv_.cuEventRecord(timed.first->e, nullptr);
  cuda = kernel.launch(spec_, d_, shape_, run->view(), nullptr, false);
  if (timed.second) drv_.cuEventRecord(timed.second->e, nullptr);
  if (cuda != CUDA_SUCCESS) return error("the " + launch_name(pair) + " failed: " + cu_error_text(cuda));
  auto checked = kernel.check_module_memory(checks_, slot_.ptr());
  // The next prepare overwrites the pool and check reads it: the launch must be over first.
  if ((cuda = drv_.cuCtxSynchronize()) != CUDA_SUCCESS) return error("the " + launch_name(pair) + " failed: " + cu_error_text(cuda));
  if (!checked) return checked.error();
  uint64_t first = 0;
  if (auto s = gpu_.download(&first, slot_, sizeof first); !s) return s.error();
  if (std::string changed = kernel.module_memory_change(first); !changed.empty())
    return std::optional(failure(changed + " after the " + launch_name(pair) + ": a launch may keep nothing for the next"));
  if (!judge) return std::optional<StageFailure>();
  auto verdict = ref_.check();
  if (!verdict) return error("the reference process failed to judge a timed launch: ", verdict.error());
  if (k == 0) kernelbench_pass_ = kernelbench_pass_ && verdict->kernelbench_pass;
  if (!verdict->pass)
    return std::optional(failure("wrong output during timing (" + launch_name(pair) + "): " + verdict->message +
                                 ": the kernel behaves differently when it is timed"));
  return std::optional<StageFailure>();
}

Result<UserTiming> UserTimingSession::run(bool& sticky) {
  sticky = false;
  CUresult cuda = CUDA_SUCCESS;
  // An error with no CUDA failure of a launch behind it is the reference process's: the harness's.
  auto fail = [&](Error e) -> Result<UserTiming> {
    sticky = cuda != CUDA_SUCCESS && cu_error_is_sticky(cuda);
    e.harness = e.harness || cuda == CUDA_SUCCESS;
    return e;
  };
  auto flush = gpu_.alloc(std::max<size_t>(gpu_.info().l2_bytes * 2, 64 << 20));
  auto slot = gpu_.alloc(sizeof(uint64_t));
  if (!flush || !slot) return !flush ? flush.error() : slot.error();
  flush_ = std::move(*flush), slot_ = std::move(*slot);
  gpu_.release_kept();

  UserTiming out;
  out.failures.resize(size_t(n_));
  // The first pair sizes the plan, as in builtin_timing: a slow kernel gets fewer launches.
  CudaEvent w0(drv_), w1(drv_);
  double first_ms = 0;
  for (int i = 0; i < n_; ++i) {
    const int k = kernel_at(0, i);
    auto f = launch(0, k, false, {&w0, &w1}, cuda);
    if (!f) return fail(f.error());
    if (*f) out.failures[size_t(k)] = *f;
    first_ms += elapsed_us(w0, w1) / 1000.0 / n_;
  }
  if (out.failures[0]) return out;
  const BenchmarkPlan sized = fit_plan(plan_.launches, first_ms);
  warm_ = std::max(1, sized.warmup), reps_ = sized.repetitions;
  std::vector<std::vector<int>> checked;
  for (int k = 0; k < n_; ++k)
    checked.push_back(pick_checked_launches(warm_, plan_.checked_launches, reps_, mix_seed(plan_.choice_seed + uint64_t(k) + 1)));

  std::vector<CudaEvent> starts, ends;
  std::vector<int> timed_kernel;
  starts.reserve(size_t(reps_ * n_)), ends.reserve(size_t(reps_ * n_));
  std::vector<std::string> names;
  for (auto* k : kernels_) names.push_back(k->lowered_name(d_));
  bool cupti_on = false;
  auto stop_cupti = [&] {
    if (cupti_on) (void)CuptiKernelTimer::stop(names, 0);
    cupti_on = false;
  };
  for (int pair = 1; pair < warm_ + reps_; ++pair) {
    const bool timed = pair >= warm_;
    if (pair == warm_) {
      if (auto s = CuptiKernelTimer::start(); !s) return s.error();
      cupti_on = true;
    }
    for (int i = 0; i < n_; ++i) {
      const int k = kernel_at(pair, i);
      if (timed) starts.emplace_back(drv_), ends.emplace_back(drv_);
      const auto& mine = checked[size_t(k)];
      const bool judge = timed && !out.failures[size_t(k)] && std::binary_search(mine.begin(), mine.end(), pair);
      auto f = launch(pair, k, judge, timed ? std::pair{&starts.back(), &ends.back()} : std::pair<CudaEvent*, CudaEvent*>{}, cuda);
      if (!f) {
        stop_cupti();
        return fail(f.error());
      }
      if (timed) timed_kernel.push_back(k);
      if (*f && !out.failures[size_t(k)]) out.failures[size_t(k)] = *f;
      if (out.failures[0]) {
        stop_cupti();
        out.kernelbench_pass = kernelbench_pass_;
        return out;
      }
    }
  }
  // Every kernel of the window but the checks' is a launch of the candidate or the best: the
  // reference runs in its own process. Not matched by name: a name can be stale
  // (CuptiKernelTimer::stop_if), and this timing loads and unloads files of other types.
  // A launch of a planned file is all its steps: its time runs from the first step's start to the
  // last one's end, gaps included, as events around a module's forward include them.
  const std::vector<std::string>& harness = checks_.kernel_names();
  std::vector<int> steps;
  size_t records = 0;
  for (int k : timed_kernel) steps.push_back(kernels_[size_t(k)]->steps()), records += size_t(steps.back());
  auto spans = CuptiKernelTimer::stop_spans_if(
      [&](const std::string& name) { return std::find(harness.begin(), harness.end(), name) == harness.end(); }, records);
  if (!spans) return spans.error();
  const std::vector<double> cupti = launch_durations_us(*spans, steps);
  std::vector<double> event_us;
  for (size_t i = 0; i < timed_kernel.size(); ++i) event_us.push_back(elapsed_us(starts[i], ends[i]));
  const std::string shortfall = cupti.empty() && !spans->empty()
                                    ? std::to_string(spans->size()) + " kernel records for " + std::to_string(records) +
                                          " kernels launched; " + CuptiKernelTimer::last_shortfall()
                                    : CuptiKernelTimer::last_shortfall();
  WindowTimings w = window_timings(n_, timed_kernel, event_us, cupti, shortfall, names[0]);
  out.timings = std::move(w.timings);
  out.paired = w.paired;
  out.bytes = bytes_;
  out.kernelbench_pass = kernelbench_pass_;
  return out;
}

}  // namespace

std::vector<int> pick_checked_launches(int first, int count, int available, uint64_t seed) {
  std::vector<int> all(static_cast<size_t>(std::max(available, 0)));
  for (int i = 0; i < available; ++i) all[size_t(i)] = first + i;
  for (int i = available - 1; i > 0; --i) std::swap(all[size_t(i)], all[size_t(mix_seed(seed + uint64_t(i)) % uint64_t(i + 1))]);
  all.resize(size_t(std::max(0, std::min(count, available))));
  std::sort(all.begin(), all.end());
  return all;
}

Result<UserTiming> user_timing(GpuContext& gpu, const DeviceChecks& checks, const KernelSpec& spec, UserReference& ref,
                               const Shape& shape, DType d, const std::vector<const LaunchableKernel*>& kernels,
                               const UserTimingPlan& plan, bool& sticky) {
  sticky = false;
  if (kernels.empty() || kernels.size() > 2) return error("user_timing takes one or two kernels");
  UserTimingSession session(gpu, checks, spec, ref, shape, d, kernels, plan);
  return session.run(sticky);
}

}  // namespace ak
