#include "harness/stages.hpp"

#include <chrono>
#include <cstring>

namespace ak {
namespace {

struct HostBuffers {
  std::vector<std::vector<char>> inputs;
  std::vector<DeviceBuffer> d_inputs, d_outputs, d_expected;
};

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

std::optional<StageFailure> CaseRunner::run(const RunCase& c, int repeats) {
  const CudaDriver& d = gpu_.driver();
  HostBuffers b;
  RunBuffers cand_bufs, ref_bufs;
  size_t bytes_in_use = 0;
  uint64_t arg_seed = c.seed;
  for (const ArgSpec& a : spec_.args) {
    if (a.kind != ArgSpec::Input && a.kind != ArgSpec::Output) continue;
    const int64_t n = a.numel(c.shape);
    const size_t bytes = size_t(n) * dtype_size(c.dtype);
    auto buf = gpu_.alloc(bytes);
    if (!buf) return failure(Correctness::Fail, buf.error().message, c);
    bytes_in_use += bytes;
    if (a.kind == ArgSpec::Input) {
      b.inputs.push_back(make_input(c.dtype, n, spec_.cols(c.shape), a.fill, c.recipe, ++arg_seed));
      if (auto s = gpu_.upload(*buf, b.inputs.back().data(), bytes); !s) return failure(Correctness::Fail, s.error().message, c);
      b.d_inputs.push_back(std::move(*buf));
    } else {
      auto expected = gpu_.alloc(size_t(n) * sizeof(float));
      if (!expected) return failure(Correctness::Fail, expected.error().message, c);
      b.d_outputs.push_back(std::move(*buf));
      b.d_expected.push_back(std::move(*expected));
    }
  }
  peak_bytes_ = std::max(peak_bytes_, bytes_in_use);
  for (auto& x : b.d_inputs) cand_bufs.inputs.push_back(&x), ref_bufs.inputs.push_back(&x);
  for (auto& x : b.d_outputs) cand_bufs.outputs.push_back(&x);
  for (auto& x : b.d_expected) ref_bufs.outputs.push_back(&x);

  CUresult r = ref_.launch(spec_, c.dtype, c.shape, ref_bufs);
  if (r == CUDA_SUCCESS) r = d.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) return cuda_failure(r, "the reference kernel failed (a harness bug, not the candidate's)", c);
  std::vector<std::vector<float>> expected;
  for (auto& e : b.d_expected) {
    expected.emplace_back(e.bytes() / sizeof(float));
    if (auto s = gpu_.download(expected.back().data(), e, e.bytes()); !s) return failure(Correctness::Fail, s.error().message, c);
  }

  std::vector<std::vector<char>> first;
  for (int rep = 0; rep < repeats; ++rep) {
    for (auto& o : b.d_outputs) d.cuMemsetD8(o.ptr(), kPoisonByte, o.bytes());
    r = cand_.launch(spec_, c.dtype, c.shape, cand_bufs);
    if (r != CUDA_SUCCESS) return cuda_failure(r, "the launch failed", c);
    r = d.cuCtxSynchronize();
    if (r != CUDA_SUCCESS) return cuda_failure(r, "the kernel failed", c);
    for (size_t i = 0; i < b.d_outputs.size(); ++i) {
      std::vector<char> got(b.d_outputs[i].bytes());
      if (auto s = gpu_.download(got.data(), b.d_outputs[i], got.size()); !s) return failure(Correctness::Fail, s.error().message, c);
      if (rep == 0) {
        Comparison cmp = compare_output(got.data(), c.dtype, expected[i].data(), int64_t(expected[i].size()),
                                        spec_.tolerance(c.dtype));
        if (!cmp.pass()) {
          StageFailure f = failure(Correctness::Fail, "wrong output on " + where(c) + ": " + cmp.describe(), c);
          f.comparison = cmp;
          return f;
        }
        first.push_back(std::move(got));
      } else if (std::memcmp(got.data(), first[i].data(), got.size()) != 0) {
        size_t at = 0;
        while (at < got.size() && got[at] == first[i][at]) ++at;
        return failure(Correctness::Fail,
                       "not deterministic on " + where(c) + ": run " + std::to_string(rep + 1) +
                           " differs from run 1 at element " + std::to_string(at / dtype_size(c.dtype)) +
                           " (a race, or unordered atomics)",
                       c);
      }
    }
  }
  for (size_t i = 0; i < b.d_inputs.size(); ++i) {
    std::vector<char> now(b.inputs[i].size());
    if (auto s = gpu_.download(now.data(), b.d_inputs[i], now.size()); !s) return failure(Correctness::Fail, s.error().message, c);
    if (now != b.inputs[i])
      return failure(Correctness::Fail, "the kernel wrote into its input on " + where(c) + ": inputs are read-only", c);
  }
  return std::nullopt;
}

void record_failure(const StageFailure& f, const std::string& stage, Verdict& v) {
  v.correctness = f.correctness;
  v.message = stage + ": " + f.message;
  v.failed_stage = stage;
  v.failed_shape = shape_str(f.at.shape);
  v.failed_dtype = dtype_name(f.at.dtype);
  v.failed_input = recipe_name(f.at.recipe);
  v.worst_index = f.comparison.worst_index;
  v.worst_got = f.comparison.worst_got;
  v.worst_expected = f.comparison.worst_expected;
  v.context_lost = f.context_lost;
}

bool run_five_stages(CaseRunner& runner, const KernelSpec& spec, uint64_t seed, Verdict& v,
                     const StageListener& on_stage) {
  uint64_t next_seed = seed * 1000003ull;
  auto stage = [&](const std::string& name, const std::vector<RunCase>& cases, int repeats,
                   const std::string& what) {
    if (on_stage) on_stage(name);
    auto t0 = std::chrono::steady_clock::now();
    std::optional<StageFailure> f;
    for (RunCase c : cases) {
      c.seed = ++next_seed;
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
    for (Recipe r : kAdversarialRecipes) stability.push_back({spec.stability_shape, d, r});
    for (auto& s : spec.edge_shapes) edges.push_back({s, d});
  }
  std::vector<RunCase> determinism;
  for (DType d : spec.dtypes) determinism.push_back({spec.determinism_shape, d});
  const std::string n_dt = std::to_string(spec.dtypes.size()) + " dtypes";
  return stage("smoke", {{spec.smoke_shape, first}}, 1, shape_str(spec.smoke_shape) + " " + dtype_name(first)) &&
         stage("shape sweep", sweep, 1, std::to_string(spec.sweep_shapes.size()) + " shapes x " + n_dt) &&
         stage("numerical stability", stability, 1, "5 adversarial inputs x " + n_dt) &&
         stage("determinism", determinism, 3, "3 runs bitwise equal at " + shape_str(spec.determinism_shape) + " x " + n_dt) &&
         stage("edge cases", edges, 1, std::to_string(spec.edge_shapes.size()) + " shapes x " + n_dt);
}

}  // namespace ak
