#include "harness/module/planned_launch.hpp"

#include <algorithm>

#include "harness/gpu/inputs.hpp"
#include "harness/module/entry_parameters.hpp"
#include "harness/module/grid_launch.hpp"
#include "harness/module/tensor_maps.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {

std::vector<std::string> compiled_step_names(const CompileOutput& compiled) {
  std::vector<std::string> steps;
  for (const FunctionInfo& f : compiled.functions) {
    const std::string name = f.name_expression.substr(0, f.name_expression.find('<'));
    if (std::find(steps.begin(), steps.end(), name) == steps.end()) steps.push_back(name);
  }
  return steps;
}

namespace {

Elem scratch_arg_elem(ScratchElem e) {
  switch (e) {
    case ScratchElem::T: return Elem::T;
    case ScratchElem::Int: return Elem::I32;
    case ScratchElem::Int64: return Elem::I64;
    default: return Elem::F32;
  }
}

/// The spec as one step sees it: its entry the step, the plan's scratch buffers between the
/// tensors and the dims, so that the ABI a message shows is the one the step must have.
KernelSpec step_spec(const KernelSpec& spec, const LaunchPlan& plan, const std::string& step) {
  KernelSpec s = spec;
  s.entry = step;
  auto first_dim = std::find_if(s.args.begin(), s.args.end(), [](const ArgSpec& a) { return a.kind == ArgSpec::Dim; });
  std::vector<ArgSpec> scratch;
  for (const PlanStatement* st : plan.scratch()) {
    ArgSpec a{ArgSpec::Scratch, st->name};
    a.elem = scratch_arg_elem(st->elem);
    scratch.push_back(std::move(a));
  }
  s.args.insert(first_dim, scratch.begin(), scratch.end());
  return s;
}

std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

/// Clusters, persistent grids and tensor maps are launched by the harness's one-entry path: not
/// beside a plan.
Status refuse_other_launches(const LoadedModule& module) {
  for (const char* symbol : {kClusterBlocksSymbol, kPersistentSymbol}) {
    auto v = module.read_int(symbol);
    if (!v) return v.error();
    if (v->has_value())
      return error(std::string("the file declares ") + symbol + " beside ak_launch: a planned file's steps are plain launches "
                   "(grid, block, smem); remove " + symbol);
  }
  auto maps = module.read_ints(kTensorMapsSymbol);
  if (!maps) return maps.error();
  if (maps->has_value())
    return error(std::string("the file declares ") + kTensorMapsSymbol + " beside ak_launch: tensor maps are not supported with a "
                 "launch plan; remove it");
  return ok();
}

std::string shape_words(const UserTypeSpec& user, const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < user.dims.size() && i < shape.size(); ++i)
    s += (s.empty() ? "" : ", ") + user.dims[i] + " = " + std::to_string(shape[i]);
  return s;
}

}  // namespace

Result<std::optional<PlannedSteps>> PlannedSteps::load(GpuContext& gpu, const KernelSpec& spec, const LoadedModule& module,
                                                       const CompileOutput& compiled, uint64_t scratch_cap_bytes) {
  auto text = module.read_text(kLaunchPlanSymbol, kMaxPlanBytes);
  if (!text) return text.error();
  const std::vector<std::string> compiled_steps = compiled_step_names(compiled);
  const bool compiled_as_plan = compiled_steps != std::vector<std::string>{spec.entry};
  if (!*text) {
    if (!compiled_as_plan) return std::optional<PlannedSteps>();
    return error("the file's text declares ak_launch (steps " + list(compiled_steps) + "), and the module exports none: "
                 "declare it extern \"C\" __constant__ char ak_launch[] = \"...\"; outside any #if");
  }
  const UserTypeSpec* user = find_user_type(spec.type);
  if (!spec.launch_plans || !user)
    return error("the module declares ak_launch, and " + spec.type + " is a built-in type whose launch is its spec's: remove it");
  auto plan = parse_launch_plan(**text);
  if (!plan) return error("the module's ", plan.error());
  if (plan->step_names() != compiled_steps)
    return error("the module's ak_launch names the steps " + list(plan->step_names()) + ", and the file's text names " +
                 list(compiled_steps) + ": write ak_launch as string literals only (no macros, no #if around it), "
                 "so that both say the same");
  if (auto s = refuse_other_launches(module); !s) return s.error();

  PlannedSteps p;
  p.gpu_ = &gpu;
  p.plan_ = std::move(*plan);
  p.user_ = std::make_shared<const UserTypeSpec>(*user);
  p.limits_.scratch_cap_bytes = scratch_cap_bytes;
  if (gpu.info().shared_bytes_per_block > 0) p.limits_.max_dynamic_smem = gpu.info().shared_bytes_per_block;
  if (auto s = check_launch_plan(p.plan_, *p.user_, p.limits_); !s) return s.error();

  for (const std::string& step : p.plan_.step_names()) {
    const KernelSpec as_step = step_spec(spec, p.plan_, step);
    const std::vector<size_t> expected = expected_parameter_sizes(as_step, false);
    std::map<DType, CUfunction> fns;
    std::map<DType, std::string> names;
    for (DType d : spec.dtypes) {
      const std::string want = step + "<" + dtype_cuda_type(d) + ">";
      auto info = std::find_if(compiled.functions.begin(), compiled.functions.end(),
                               [&](const FunctionInfo& f) { return f.name_expression == want; });
      if (info == compiled.functions.end()) return error("the compiled module has no " + want);
      auto f = module.function(info->lowered_name);
      if (!f) return f.error();
      auto actual = function_parameter_sizes(gpu.driver(), *f);
      if (!actual) return actual.error();
      if (std::string why = parameter_mismatch(as_step, false, expected, *actual); !why.empty())
        return error(want + ": " + why + " (every step of ak_launch takes the same parameters: the spec's tensors, the "
                     "scratch buffers in declaration order, the dims)");
      fns[d] = *f;
      names[d] = info->lowered_name;
    }
    p.functions_.push_back(std::move(fns));
    p.names_.push_back(std::move(names));
  }
  return std::optional<PlannedSteps>(std::move(p));
}

Status PlannedSteps::check_at(const Shape& shape, DType d) const {
  auto at = evaluate_launch_plan(plan_, plan_values(*user_, shape), d, limits_);
  if (!at) return error("at " + shape_words(*user_, shape) + " (" + dtype_name(d) + "): ", at.error());
  return ok();
}

Status PlannedSteps::prepare(const Shape& shape, DType d) const {
  Prepared& now = *prepared_;
  if (now.ready && now.shape == shape && now.dtype == d) return ok();
  auto at = evaluate_launch_plan(plan_, plan_values(*user_, shape), d, limits_);
  if (!at) return error("at " + shape_words(*user_, shape) + " (" + dtype_name(d) + "): ", at.error());
  now.ready = false;
  now.scratch.clear();   // the last shape's buffers go before the new ones are taken
  for (size_t i = 0; i < at->scratch_bytes.size(); ++i) {
    auto buf = gpu_->alloc(size_t(at->scratch_bytes[i]));
    if (!buf)
      return error("allocating the scratch " + plan_.scratch()[i]->name + " (" + std::to_string(at->scratch_bytes[i]) +
                   " bytes) at " + shape_words(*user_, shape) + ": ", buf.error());
    now.scratch.push_back(std::move(*buf));
  }
  for (size_t i = 0; i < at->steps.size(); ++i) {
    const int64_t smem = at->steps[i].smem;
    if (smem <= 48 * 1024) continue;
    CUfunction f = functions_[i].at(d);
    if (smem_allowed_[f] >= smem) continue;
    if (auto s = cu_check(gpu_->driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(smem)),
                          "allowing step " + at->steps[i].name + " " + std::to_string(smem) + " bytes of dynamic shared memory");
        !s)
      return s;
    smem_allowed_[f] = smem;
  }
  now.at = std::move(*at);
  now.shape = shape;
  now.dtype = d;
  now.ready = true;
  return ok();
}

Status PlannedSteps::poison_scratch(CUstream s) const {
  for (const DeviceBuffer& b : prepared_->scratch)
    if (auto st = cu_check(gpu_->driver().cuMemsetD8Async(b.ptr(), kPoisonByte, b.bytes(), s), "poisoning the plan's scratch"); !st)
      return st;
  return ok();
}

int PlannedSteps::first_block_threads(const Shape& shape, DType d) const {
  auto at = evaluate_launch_plan(plan_, plan_values(*user_, shape), d, limits_);
  if (!at || at->steps.empty()) return 0;
  const auto& b = at->steps.front().block;
  return int(b[0] * b[1] * b[2]);
}

CUresult PlannedSteps::launch(const KernelSpec& spec, DType d, const Shape& shape, const RunBuffers& b, CUstream s) const {
  if (!prepare(shape, d)) return CUDA_ERROR_INVALID_VALUE;   // before_launch prepared it, and said why when it could not
  const Prepared& now = *prepared_;
  std::vector<CUdeviceptr> ptrs;
  std::vector<int> ints;
  ptrs.reserve(spec.args.size() + now.scratch.size());
  ints.reserve(spec.args.size());
  std::vector<void*> params;
  size_t in = 0, out = 0;
  bool scratch_passed = false;
  auto pass_scratch = [&] {
    for (const DeviceBuffer& buf : now.scratch) ptrs.push_back(buf.ptr()), params.push_back(&ptrs.back());
    scratch_passed = true;
  };
  for (const ArgSpec& a : spec.args) {
    switch (a.kind) {
      case ArgSpec::Input: ptrs.push_back(b.inputs.at(in++)->ptr()); params.push_back(&ptrs.back()); break;
      case ArgSpec::Output: ptrs.push_back(b.outputs.at(out++)->ptr()); params.push_back(&ptrs.back()); break;
      case ArgSpec::Dim:
        if (!scratch_passed) pass_scratch();
        ints.push_back(int(a.int_value(shape)));
        params.push_back(&ints.back());
        break;
      default: return CUDA_ERROR_INVALID_VALUE;   // a user type's arguments are tensors and dims
    }
  }
  if (!scratch_passed) pass_scratch();
  const CudaDriver& drv = gpu_->driver();
  for (size_t i = 0; i < now.at.steps.size(); ++i) {
    const StepLaunch& st = now.at.steps[i];
    CUresult r = drv.cuLaunchKernel(functions_[i].at(d), unsigned(st.grid[0]), unsigned(st.grid[1]), unsigned(st.grid[2]),
                                    unsigned(st.block[0]), unsigned(st.block[1]), unsigned(st.block[2]), unsigned(st.smem), s,
                                    params.data(), nullptr);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

}  // namespace ak
