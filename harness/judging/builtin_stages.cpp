#include "harness/judging/builtin_stages.hpp"

#include "harness/judging/evaluation_seeds.hpp"
#include "harness/judging/reference_outputs.hpp"

#include <chrono>
#include <cstring>

namespace ak {
namespace {

StageFailure failure(Correctness c, std::string msg, const RunCase& at, bool lost = false) {
  StageFailure f;
  f.correctness = c;
  f.message = std::move(msg);
  f.at = at;
  f.context_lost = lost;
  return f;
}

std::string where(const RunCase& c) {
  return shape_str(c.shape) + " " + dtype_name(c.dtype) + " (" + recipe_name(c.recipe) + " inputs)";
}

/// A CUDA error from the candidate: sticky ones end the worker's context (CRASH), others FAIL.
StageFailure cuda_failure(CUresult r, const std::string& when, const RunCase& c) {
  bool sticky = cu_error_is_sticky(r);
  return failure(sticky ? Correctness::Crash : Correctness::Fail,
                 when + " on " + where(c) + ": " + cu_error_text(r), c, sticky);
}

}  // namespace

Result<std::string> BuiltinCaseRunner::module_memory_change(const LaunchableKernel& k) {
  if (memory_slot_.bytes() == 0) {
    auto slot = gpu_.alloc(sizeof(uint64_t));
    if (!slot) return slot.error();
    memory_slot_ = std::move(*slot);
  }
  const CudaDriver& d = gpu_.driver();
  if (auto s = cu_check(d.cuMemsetD8(memory_slot_.ptr(), 0xff, sizeof(uint64_t)), "clearing a check's slot"); !s)
    return s.error();
  if (auto s = k.check_module_memory(checks_, memory_slot_.ptr()); !s) return s.error();
  uint64_t first = 0;
  if (auto s = gpu_.download(&first, memory_slot_, sizeof first); !s) return s.error();
  return k.module_memory_change(first);
}

std::optional<StageFailure> BuiltinCaseRunner::run(const RunCase& c, int repeats) {
  const CudaDriver& d = gpu_.driver();
  auto fail = [&](const std::string& msg) { return failure(Correctness::Fail, msg, c); };
  auto failed = [&](const Error& e) {
    StageFailure f = fail(e.message);
    f.harness = e.harness;
    return f;
  };
  auto set = make_run_set(gpu_, spec_, c.shape, c.dtype, c.recipe, c.seed);
  if (!set) return failed(set.error());
  peak_bytes_ = std::max(peak_bytes_, set->bytes);
  const RunBuffers cand_bufs = set->view();
  // A copy on the GPU of what must not change: it holds nothing the kernel does not see anyway.
  std::vector<DeviceBuffer> pristine;
  for (auto& in : set->inputs) {
    auto copy = gpu_.alloc(in.bytes());
    if (!copy) return failed(copy.error());
    if (auto s = cu_check(d.cuMemcpyDtoD(copy->ptr(), in.ptr(), in.bytes()), "copying a buffer on the GPU"); !s)
      return failed(s.error());
    pristine.push_back(std::move(*copy));
  }
  // The first run's outputs are remembered as keyed fingerprints, on the host: no copy of them
  // waits in device memory for a later run to hand back as its own.
  auto key = csprng_u64();
  if (!key) return failed(key.error());
  std::vector<uint64_t> first(set->outputs.size());
  for (int rep = 0; rep < repeats; ++rep) {
    if (auto s = poison_writable(gpu_, *set); !s) return failed(s.error());
    if (auto s = cand_.before_launch(checks_, c.shape, c.dtype); !s) return failed(s.error());
    CUresult r = cand_.launch(spec_, c.dtype, c.shape, cand_bufs);
    if (r != CUDA_SUCCESS) return cuda_failure(r, "the launch failed", c);
    auto changed = module_memory_change(cand_);
    r = d.cuCtxSynchronize();
    if (r != CUDA_SUCCESS) return cuda_failure(r, "the kernel failed", c);
    if (!changed) return failed(changed.error());
    if (!changed->empty()) return fail(*changed + " (on " + where(c) + "): a launch may keep nothing for the next");
    if (std::string left = counters_left_set(gpu_, *set); !left.empty()) return fail(left + " (on " + where(c) + ")");
    for (size_t i = 0; i < set->inputs.size(); ++i) {
      auto differ = checks_.differing_bytes(set->inputs[i], pristine[i], pristine[i].bytes());
      if (!differ) return failed(differ.error());
      if (*differ) return fail("the kernel wrote into its input on " + where(c) + ": inputs are read-only");
    }
    if (rep == 0) {
      // Only now, with the candidate done, does the reference compute what it should have written.
      auto expected = reference_outputs(gpu_, checks_, spec_, ref_, cand_bufs, c.shape, c.dtype, c.sample_seed, r);
      if (!expected && r != CUDA_SUCCESS)
        return cuda_failure(r, "the reference kernel failed (a harness bug, not the candidate's)", c);
      if (!expected) return failed(expected.error());
      for (size_t i = 0; i < set->outputs.size(); ++i) {
        auto cmp = expected->judge(i, set->outputs[i], c.dtype, spec_.tolerance_for(c.dtype, c.shape));
        if (!cmp) return failed(cmp.error());
        if (!cmp->pass()) {
          StageFailure f = fail("wrong output on " + where(c) + ": " + cmp->describe() + expected->sampled_note());
          f.comparison = *cmp;
          return f;
        }
      }
      if (auto s = expected->wipe(); !s) return failed(s.error());
    }
    for (size_t i = 0; i < set->outputs.size() && repeats > 1; ++i) {
      auto print = checks_.fingerprint(set->outputs[i], *key);
      if (!print) return failed(print.error());
      if (rep == 0) first[i] = *print;
      else if (*print != first[i])
        return fail("not deterministic on " + where(c) + ": run " + std::to_string(rep + 1) + " differs from run 1" +
                    (set->outputs.size() > 1 ? " in output " + std::to_string(i + 1) : "") + " (a race, or unordered atomics)");
    }
  }
  return std::nullopt;
}

bool run_builtin_stages(BuiltinCaseRunner& runner, const KernelSpec& spec, uint64_t seed, uint64_t sample_seed,
                        Verdict& v, const StageListener& on_stage) {
  uint64_t next_seed = seed * 1000003ull, next_sample = sample_seed;
  auto stage = [&](const std::string& name, const std::vector<RunCase>& cases, int repeats,
                   const std::string& what) {
    if (on_stage) on_stage(name);
    auto t0 = std::chrono::steady_clock::now();
    std::optional<StageFailure> f;
    for (RunCase c : cases) {
      c.seed = ++next_seed;
      c.sample_seed = mix_seed(++next_sample);
      if ((f = runner.run(c, repeats))) break;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    v.stages.push_back({name, !f, s, f ? f->message : what});
    if (f) record_failure(*f, name, v);
    return !f;
  };
  const DType first = spec.dtypes.front();
  std::vector<RunCase> sweep, stability, edges;
  for (DType d : spec.dtypes) {
    for (auto& s : spec.sweep_shapes) sweep.push_back({s, d});
    for (Recipe r : spec.stability_recipes) stability.push_back({spec.stability_shape, d, r});
    for (auto& s : spec.edge_shapes) edges.push_back({s, d});
  }
  std::vector<RunCase> determinism;
  for (DType d : spec.dtypes) determinism.push_back({spec.determinism_shape, d});
  const std::string n_dt = std::to_string(spec.dtypes.size()) + " dtypes";
  return stage("smoke", {{spec.smoke_shape, first}}, 1, shape_str(spec.smoke_shape) + " " + dtype_name(first)) &&
         stage("shape sweep", sweep, 1, std::to_string(spec.sweep_shapes.size()) + " shapes x " + n_dt) &&
         stage("numerical stability", stability, 1, std::to_string(spec.stability_recipes.size()) + " adversarial inputs x " + n_dt) &&
         stage("determinism", determinism, 3, "3 runs bitwise equal at " + shape_str(spec.determinism_shape) + " x " + n_dt) &&
         stage("edge cases", edges, 1, std::to_string(spec.edge_shapes.size()) + " shapes x " + n_dt);
}

}  // namespace ak
