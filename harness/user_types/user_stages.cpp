#include "harness/user_types/user_stages.hpp"

#include <chrono>
#include <cstring>
#include <sstream>

#include "harness/gpu/inputs.hpp"

namespace ak {
namespace {

RunCase run_case(const UserRunCase& c) { return {c.shape, c.dtype, Recipe::Normal, 0, 0}; }

/// The case, with what the reference process said of its edge inputs when it drew them.
std::string where(const UserRunCase& c, const std::string& drawn = "") {
  return shape_str(c.shape) + " " + dtype_name(c.dtype) + " (" + (drawn.empty() ? inputs_name(c) : "edge inputs: " + drawn) + ")";
}

StageFailure failure(Correctness k, std::string msg, const UserRunCase& c, bool lost = false) {
  StageFailure f;
  f.correctness = k;
  f.message = std::move(msg);
  f.at = run_case(c);
  f.context_lost = lost;
  return f;
}

/// A CUDA error from the candidate: sticky ones end the worker's context (CRASH), others FAIL.
/// A failure of the harness's own making (Error::harness) stays the harness's.
StageFailure failed(const Error& e, const UserRunCase& c) {
  StageFailure f = failure(Correctness::Fail, e.message, c);
  f.harness = e.harness;
  return f;
}

StageFailure cuda_failure(CUresult r, const std::string& when, const UserRunCase& c) {
  const bool sticky = cu_error_is_sticky(r);
  return failure(sticky ? Correctness::Crash : Correctness::Fail, when + " on " + where(c) + ": " + cu_error_text(r), c, sticky);
}

}  // namespace

std::string scale_name(double scale) {
  std::ostringstream o;
  o << "x" << scale;
  return o.str();
}

std::string inputs_name(const UserRunCase& c) {
  if (!c.inputs.empty()) return "get_inputs() edge: " + c.inputs;
  return c.scale != 1 ? "get_inputs() " + scale_name(c.scale) : "get_inputs()";
}

std::vector<UserStage> user_stage_plan(const KernelSpec& spec) {
  const DType first = spec.dtypes.front();
  const std::string n_dt = std::to_string(spec.dtypes.size()) + " dtypes";
  std::vector<UserStage> plan(5);
  plan[0] = {"smoke", {{spec.smoke_shape, first}}, 1, shape_str(spec.smoke_shape) + " " + dtype_name(first)};
  plan[1] = {"shape sweep", {}, 1, std::to_string(spec.sweep_shapes.size()) + " shapes x " + n_dt};
  std::string scales;
  for (double s : kStabilityScales) scales += (scales.empty() ? "" : " and ") + scale_name(s);
  plan[2] = {"numerical stability", {}, 1,
             "get_inputs() at " + shape_str(spec.stability_shape) + " with its float inputs scaled " + scales + " x " + n_dt +
                 " (values near the dtype's limits, subnormals and mixed signs come in the edge cases; one huge "
                 "value in a row and constant rows are not among them)"};
  plan[3] = {"determinism", {}, 3, "3 runs bitwise equal at " + shape_str(spec.determinism_shape) + " x " + n_dt};
  plan[4] = {"edge cases", {}, 1,
             std::to_string(spec.edge_shapes.size()) + " shapes x " + n_dt + ", then get_inputs() at " +
                 shape_str(spec.stability_shape) + " x " + n_dt + " with random signs, with zeros, at magnitudes 2^k "
                 "apart, with the dtype's tiny values and with its huge ones (each where the reference stays finite; "
                 "int64 inputs, parameters and buffers as drawn)"};
  for (DType d : spec.dtypes) {
    for (auto& s : spec.sweep_shapes) plan[1].cases.push_back({s, d});
    for (double scale : kStabilityScales) plan[2].cases.push_back({spec.stability_shape, d, scale});
    plan[3].cases.push_back({spec.determinism_shape, d});
    for (auto& s : spec.edge_shapes) plan[4].cases.push_back({s, d});
  }
  for (DType d : spec.dtypes)
    for (const char* recipe : kEdgeRecipes) plan[4].cases.push_back({spec.stability_shape, d, 1, recipe});
  return plan;
}

std::optional<StageFailure> UserCaseRunner::launch_once(const UserRunCase& c, const PreparedRun& run, const RunCase&) {
  const CudaDriver& d = gpu_.driver();
  if (memory_slot_.bytes() == 0) {
    auto slot = gpu_.alloc(sizeof(uint64_t));
    if (!slot) return failed(slot.error(), c);
    memory_slot_ = std::move(*slot);
  }
  if (auto s = cu_check(d.cuMemsetD8(memory_slot_.ptr(), 0xff, sizeof(uint64_t)), "clearing a check's slot"); !s)
    return failed(s.error(), c);
  if (auto s = cand_.before_launch(checks_, c.shape, c.dtype); !s) return failed(s.error(), c);
  CUresult r = cand_.launch(spec_, c.dtype, c.shape, run.view());
  if (r != CUDA_SUCCESS) return cuda_failure(r, "the launch failed", c);
  auto checked = cand_.check_module_memory(checks_, memory_slot_.ptr());
  r = d.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) return cuda_failure(r, "the kernel failed", c);
  if (!checked) return failed(checked.error(), c);
  uint64_t first = 0;
  if (auto s = gpu_.download(&first, memory_slot_, sizeof first); !s) return failed(s.error(), c);
  if (std::string changed = cand_.module_memory_change(first); !changed.empty())
    return failure(Correctness::Fail, changed + " (on " + where(c) + "): a launch may keep nothing for the next", c);
  return std::nullopt;
}

std::optional<StageFailure> UserCaseRunner::run(const UserRunCase& c, int repeats) {
  auto harness_failure = [&](const std::string& msg) {
    StageFailure f = failure(Correctness::Fail, "the reference process failed on " + where(c) + " (the harness's problem, not the candidate's): " + msg, c);
    f.harness = true;
    return f;
  };
  auto prepared = ref_.prepare(c.shape, c.dtype, c.scale, c.inputs);
  if (!prepared) return harness_failure(prepared.error().message);
  const std::string at = where(c, prepared->edge_inputs);
  peak_bytes_ = std::max(peak_bytes_, prepared->bytes);
  std::vector<std::vector<char>> first(prepared->outputs.size());
  for (int rep = 0; rep < repeats; ++rep) {
    if (rep > 0) {  // the same inputs again, the outputs and the pool's other bytes poisoned as prepare poisons them
      for (auto& o : prepared->outputs)
        if (auto s = cu_check(gpu_.driver().cuMemsetD8(o.ptr(), kPoisonByte, o.bytes()), "poisoning the outputs"); !s)
          return failed(s.error(), c);
      if (auto s = prepared->poison_gaps(gpu_.driver()); !s) return failed(s.error(), c);
    }
    if (auto f = launch_once(c, *prepared, run_case(c))) return f;
    auto verdict = ref_.check();
    if (!verdict) return harness_failure(verdict.error().message);
    // KernelBench judges a problem on what its get_inputs() draws: our scaled and edge inputs, where
    // an honest log-softmax or sum rounds past 1e-4, are our own verdict's, not KernelBench's.
    if (c.scale == 1 && c.inputs.empty()) kernelbench_pass_ = kernelbench_pass_ && verdict->kernelbench_pass;
    if (!verdict->pass) return failure(Correctness::Fail, "wrong output on " + at + ": " + verdict->message, c);
    for (size_t i = 0; i < prepared->outputs.size() && repeats > 1; ++i) {
      std::vector<char> bytes(prepared->outputs[i].bytes());
      if (auto s = cu_check(gpu_.driver().cuMemcpyDtoH(bytes.data(), prepared->outputs[i].ptr(), bytes.size()), "reading an output"); !s)
        return failed(s.error(), c);
      if (rep == 0) first[i] = std::move(bytes);
      else if (bytes != first[i])
        return failure(Correctness::Fail, "not deterministic on " + where(c) + ": run " + std::to_string(rep + 1) +
                                              " differs from run 1" + (prepared->outputs.size() > 1 ? " in output " + std::to_string(i + 1) : "") +
                                              " (a race, or unordered atomics)", c);
    }
  }
  return std::nullopt;
}

bool run_user_stages(UserCaseRunner& runner, const KernelSpec& spec, Verdict& v, const StageListener& on_stage) {
  bool passed = true;
  for (const UserStage& stage : user_stage_plan(spec)) {
    if (on_stage) on_stage(stage.name);
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<StageFailure> f;
    const UserRunCase* at = nullptr;
    for (const UserRunCase& c : stage.cases)
      if ((f = runner.run(c, stage.repeats))) {
        at = &c;
        break;
      }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    v.stages.push_back({stage.name, !f, s, f ? f->message : stage.detail});
    if (f) {
      record_failure(*f, stage.name, v);
      v.failed_input = inputs_name(*at);   // record_failure took the harness's blame from the failure
      passed = false;
      break;
    }
  }
  v.kernelbench_pass = passed && runner.kernelbench_pass();
  return passed;
}

}  // namespace ak
