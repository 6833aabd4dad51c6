#include "harness/module/kernel_launch.hpp"

#include <cstdio>
#include <functional>
#include <tuple>

#include "harness/module/entry_parameters.hpp"

namespace ak {
namespace {

/// For each dtype, the function of the loaded module compiled for expression(d).
Status find_functions(const KernelSpec& spec, const CompileOutput& compiled, const std::function<std::string(DType)>& expression,
                      const LoadedModule& module, std::map<DType, CUfunction>& fns, std::map<DType, std::string>& names) {
  for (DType d : spec.dtypes) {
    const std::string want = expression(d);
    const FunctionInfo* info = nullptr;
    for (auto& f : compiled.functions)
      if (f.name_expression == want) info = &f;
    if (!info) return error("the compiled module has no " + want);
    auto f = module.function(info->lowered_name);
    if (!f) return f.error();
    fns[d] = *f;
    names[d] = info->lowered_name;
  }
  return ok();
}

/// Reads ak_tensor_maps (none: no maps) and checks every entry point's parameters against the ABI.
Status read_tensor_maps(const CudaDriver& d, const KernelSpec& spec, const LoadedModule& module,
                        const std::map<DType, CUfunction>& fns, std::vector<TensorMapDecl>& maps) {
  auto ints = module.read_ints(kTensorMapsSymbol);
  if (!ints) return ints.error();
  if (ints->has_value()) {
    auto parsed = parse_tensor_maps(**ints, spec);
    if (!parsed) return parsed.error();
    maps = std::move(*parsed);
  }
  const std::vector<size_t> expected = expected_parameter_sizes(spec, !maps.empty());
  for (auto& [dt, f] : fns) {
    auto actual = function_parameter_sizes(d, f);
    if (!actual) return actual.error();
    if (std::string why = parameter_mismatch(spec, !maps.empty(), expected, *actual); !why.empty())
      return error(entry_expression(spec, dt) + ": " + why);
  }
  return ok();
}

}  // namespace

Result<LaunchableKernel> LaunchableKernel::candidate(GpuContext& gpu, const KernelSpec& spec,
                                                     const CompileOutput& compiled, uint64_t scratch_cap_bytes) {
  LaunchableKernel k;
  k.d_ = &gpu.driver();
  k.slack_ = gpu.slack();
  auto m = gpu.load(compiled.cubin);
  if (!m) return m.error();
  k.module_ = std::move(*m);
  auto plan = PlannedSteps::load(gpu, spec, k.module_, compiled, scratch_cap_bytes);
  if (!plan) return plan.error();
  if (*plan) {
    // The plan says the launch: no entry point, no geometry constants (ignored when present).
    k.plan_ = std::make_shared<const PlannedSteps>(std::move(**plan));
    k.functions_ = k.plan_->first_functions();
    k.names_ = k.plan_->first_names();
    k.geometry_.block_threads = k.plan_->first_block_threads(spec.bench_shape.empty() ? spec.smoke_shape : spec.bench_shape,
                                                             spec.dtypes.front());
    auto memory = ModuleMemory::hold(gpu, k.module_, compiled.cubin);
    if (!memory) return memory.error();
    k.memory_ = std::move(*memory);
    return k;
  }
  auto expr = [&](DType d) { return entry_expression(spec, d); };
  if (auto s = find_functions(spec, compiled, expr, k.module_, k.functions_, k.names_); !s) return s.error();
  auto threads = k.module_.read_int(kBlockThreadsSymbol);
  if (!threads) return threads.error();
  if (!*threads)
    return error(std::string("the module exports no ") + kBlockThreadsSymbol +
                 ": define extern \"C\" __constant__ int " + kBlockThreadsSymbol + " = <threads>;");
  LaunchGeometry& g = k.geometry_;
  g.block_threads = **threads;
  if (g.block_threads < 1 || g.block_threads > 1024)
    return error(std::string(kBlockThreadsSymbol) + " = " + std::to_string(g.block_threads) +
                 ": expected 1 to 1024 threads per block");
  for (auto [symbol, field, fallback] : {std::tuple{kRowsPerBlockSymbol, &g.rows_per_block, 1},
                                         std::tuple{kTileMSymbol, &g.tile_m, 0}, std::tuple{kTileNSymbol, &g.tile_n, 0},
                                         std::tuple{kItemsPerThreadSymbol, &g.items_per_thread, 1}}) {
    auto v = k.module_.read_int(symbol);
    if (!v) return v.error();
    *field = v->value_or(fallback);
    if (*field < 0 || (v->has_value() && *field == 0))
      return error(std::string(symbol) + " = " + std::to_string(*field) + ": it must be at least 1");
  }
  if (spec.grid(spec.smoke_shape, g) < 1)
    return error("the launch geometry the module exports (" + std::to_string(g.block_threads) + " threads, " +
                 kTileMSymbol + " = " + std::to_string(g.tile_m) + ", " + kTileNSymbol + " = " +
                 std::to_string(g.tile_n) + ") gives no blocks for " + shape_str(spec.smoke_shape) +
                 ": a " + spec.type + " file must export the constants its grid is computed from "
                 "(kernels_cuda/" + spec.type + "/README.md)");
  auto memory = ModuleMemory::hold(gpu, k.module_, compiled.cubin);
  if (!memory) return memory.error();
  k.memory_ = std::move(*memory);
  auto smem = k.module_.read_int(kSmemBytesSymbol);
  if (!smem) return smem.error();
  k.smem_bytes_ = smem->value_or(0);
  if (k.smem_bytes_ > 48 * 1024)
    for (auto& [dt, f] : k.functions_)
      if (auto s = cu_check(gpu.driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k.smem_bytes_),
                            "allowing " + std::to_string(k.smem_bytes_) + " bytes of dynamic shared memory");
          !s)
        return s.error();
  if (auto s = read_tensor_maps(gpu.driver(), spec, k.module_, k.functions_, k.tensor_maps_); !s) return s.error();
  auto grid = read_grid_launch(gpu, k.module_, k.functions_, g.block_threads, k.smem_bytes_);
  if (!grid) return grid.error();
  k.grid_launch_ = std::move(*grid);
  return k;
}

Result<LaunchableKernel> LaunchableKernel::reference(GpuContext& gpu, const KernelSpec& spec,
                                                     const CompileOutput& compiled, ReferenceOutput out) {
  LaunchableKernel k;
  k.d_ = &gpu.driver();
  auto m = gpu.load(compiled.cubin);
  if (!m) return m.error();
  k.module_ = std::move(*m);
  auto expr = [&](DType d) { return reference_expression(spec, d, out); };
  if (auto s = find_functions(spec, compiled, expr, k.module_, k.functions_, k.names_); !s) return s.error();
  k.geometry_.block_threads = spec.reference_threads;
  k.is_reference_ = true;
  return k;
}

Result<int> LaunchableKernel::max_blocks_per_sm(DType d) const {
  int blocks = 0;
  if (auto s = cu_check(d_->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, functions_.at(d), geometry_.block_threads,
                                                                         size_t(dynamic_smem_bytes())),
                        "asking the driver how many blocks fit on one SM");
      !s)
    return s.error();
  return blocks;
}

FunctionInfo LaunchableKernel::attributes(DType d) const {
  FunctionInfo info;
  info.lowered_name = names_.at(d);
  CUfunction f = functions_.at(d);
  d_->cuFuncGetAttribute(&info.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  d_->cuFuncGetAttribute(&info.stack_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
  d_->cuFuncGetAttribute(&info.static_smem_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
  return info;
}

const TensorMapsParam* LaunchableKernel::encoded_maps(const KernelSpec& spec, DType d, const Shape& shape,
                                                      const std::vector<CUdeviceptr>& operands) const {
  // The timed launches repeat a handful of (shape, buffers) calls hundreds of times: each is
  // encoded once. A new evaluation loads the kernel afresh, so the cache never outlives it.
  MapsKey key{d, shape, operands};
  if (auto it = maps_cache_.find(key); it != maps_cache_.end()) return &it->second;
  auto encoded = encode_tensor_maps(*d_, tensor_maps_, spec, shape, d, operands);
  // The declarations were checked at load and every map the checks let through encodes; a
  // refusal here is the driver's: said on stderr (the daemon logs it) and failed as a launch.
  if (!encoded) {
    std::fprintf(stderr, "tensor maps: %s\n", encoded.error().message.c_str());
    return nullptr;
  }
  if (maps_cache_.size() >= kMapsCacheEntries) maps_cache_.clear();
  return &maps_cache_.emplace(std::move(key), *encoded).first->second;
}

CUresult LaunchableKernel::launch(const KernelSpec& spec, DType d, const Shape& shape,
                                  const RunBuffers& b, CUstream s, bool restore_memory) const {
  if (plan_) {
    if (restore_memory)
      if (CUresult e = memory_.restore(s); e != CUDA_SUCCESS) return e;
    return plan_->launch(spec, d, shape, b, s);
  }
  // Storage for each argument's value; params points into it.
  std::vector<CUdeviceptr> ptrs;
  std::vector<int> ints;
  std::vector<float> floats;
  ptrs.reserve(spec.args.size());
  ints.reserve(spec.args.size());
  floats.reserve(spec.args.size());
  ptrs.reserve(spec.args.size() + 1);
  std::vector<void*> params;
  size_t in = 0, out = 0, scratch = 0, counters = 0;
  std::vector<CUdeviceptr> operands;   // the address of each argument, 0 for non-buffers: what maps cover
  auto pass_buffer = [&](const DeviceBuffer* buf) {
    ptrs.push_back(buf ? buf->ptr() : CUdeviceptr(0));
    params.push_back(&ptrs.back());
    operands.push_back(ptrs.back());
  };
  for (const ArgSpec& a : spec.args) {
    switch (a.kind) {
      case ArgSpec::Input: pass_buffer(b.inputs.at(in++)); break;
      case ArgSpec::Output: pass_buffer(b.outputs.at(out++)); break;
      case ArgSpec::Scratch: pass_buffer(b.scratch.at(scratch++)); break;
      case ArgSpec::Counters: pass_buffer(b.counters.at(counters++)); break;
      case ArgSpec::Dim: ints.push_back(int(a.int_value(shape))); params.push_back(&ints.back()); operands.push_back(0); break;
      case ArgSpec::FloatConst: floats.push_back(a.value); params.push_back(&floats.back()); operands.push_back(0); break;
    }
  }
  if (!tensor_maps_.empty()) {
    const TensorMapsParam* maps = encoded_maps(spec, d, shape, operands);
    if (!maps) return CUDA_ERROR_INVALID_VALUE;
    params.push_back(const_cast<TensorMapsParam*>(maps));
  }
  const int64_t per_row = spec.reference_blocks_per_row ? spec.reference_blocks_per_row(shape) : 1;
  int64_t grid = 0;
  if (!is_reference_) {
    grid = launch_blocks(grid_launch_, d, spec.grid(shape, geometry_));
  } else if (spec.validation_rows > 0) {
    pass_buffer(b.sample_rows);
    grid = (b.sample_rows ? b.sample_count : output_rows(spec, shape)) * per_row;
  } else {
    grid = spec.rows(shape) * per_row;
  }
  if (grid < 1 || grid > 0x7fffffff) return CUDA_ERROR_INVALID_VALUE;
  if (restore_memory)
    if (CUresult e = memory_.restore(s); e != CUDA_SUCCESS) return e;
  return launch_grid(*d_, functions_.at(d), grid_launch_, grid, geometry_.block_threads, is_reference_ ? 0 : smem_bytes_,
                     s, params.data());
}

Status LaunchableKernel::before_launch(const DeviceChecks& checks, const Shape& shape, DType d) const {
  if (plan_) {
    // Allocated first: a new scratch's slack is poisoned with every other allocation's below.
    if (auto s = plan_->prepare(shape, d); !s) return s;
    if (auto s = plan_->poison_scratch(nullptr); !s) return s;
  }
  if (auto s = checks.poison_before_launch(slack_.get()); !s) return s;
  return memory_.snapshot(checks);
}

}  // namespace ak
