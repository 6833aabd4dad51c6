#include "harness/kernel_launch.hpp"


#include <functional>

namespace ak {
namespace {

/// Loads the module and, for each dtype, the function compiled for expression(d).
Status load_functions(GpuContext& gpu, const KernelSpec& spec, const CompileOutput& compiled,
                      const std::function<std::string(DType)>& expression, LoadedModule& module,
                      std::map<DType, CUfunction>& fns, std::map<DType, std::string>& names) {
  auto m = gpu.load(compiled.cubin);
  if (!m) return m.error();
  module = std::move(*m);
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

}  // namespace

Result<LaunchableKernel> LaunchableKernel::candidate(GpuContext& gpu, const KernelSpec& spec,
                                                     const CompileOutput& compiled) {
  LaunchableKernel k;
  k.d_ = &gpu.driver();
  auto expr = [&](DType d) { return entry_expression(spec, d); };
  if (auto s = load_functions(gpu, spec, compiled, expr, k.module_, k.functions_, k.names_); !s) return s.error();
  auto threads = k.module_.read_int(kBlockThreadsSymbol);
  if (!threads) return threads.error();
  if (!*threads)
    return error(std::string("the module exports no ") + kBlockThreadsSymbol +
                 ": define extern \"C\" __constant__ int " + kBlockThreadsSymbol + " = <threads>;");
  k.block_threads_ = **threads;
  if (k.block_threads_ < 1 || k.block_threads_ > 1024)
    return error(std::string(kBlockThreadsSymbol) + " = " + std::to_string(k.block_threads_) +
                 ": expected 1 to 1024 threads per block");
  auto rows = k.module_.read_int(kRowsPerBlockSymbol);
  if (!rows) return rows.error();
  k.rows_per_block_ = rows->value_or(1);
  if (k.rows_per_block_ < 1) return error(std::string(kRowsPerBlockSymbol) + " must be at least 1");
  auto smem = k.module_.read_int(kSmemBytesSymbol);
  if (!smem) return smem.error();
  k.smem_bytes_ = smem->value_or(0);
  if (k.smem_bytes_ > 48 * 1024)
    for (auto& [dt, f] : k.functions_)
      if (auto s = cu_check(gpu.driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k.smem_bytes_),
                            "allowing " + std::to_string(k.smem_bytes_) + " bytes of dynamic shared memory");
          !s)
        return s.error();
  return k;
}

Result<LaunchableKernel> LaunchableKernel::reference(GpuContext& gpu, const KernelSpec& spec,
                                                     const CompileOutput& compiled, ReferenceOutput out) {
  LaunchableKernel k;
  k.d_ = &gpu.driver();
  auto expr = [&](DType d) { return reference_expression(spec, d, out); };
  if (auto s = load_functions(gpu, spec, compiled, expr, k.module_, k.functions_, k.names_); !s) return s.error();
  k.block_threads_ = spec.reference_threads;
  k.is_reference_ = true;
  return k;
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

CUresult LaunchableKernel::launch(const KernelSpec& spec, DType d, const Shape& shape,
                                  const RunBuffers& b, CUstream s) const {
  // Storage for each argument's value; params points into it.
  std::vector<CUdeviceptr> ptrs;
  std::vector<int> ints;
  std::vector<float> floats;
  ptrs.reserve(spec.args.size());
  ints.reserve(spec.args.size());
  floats.reserve(spec.args.size());
  std::vector<void*> params;
  size_t in = 0, out = 0;
  for (const ArgSpec& a : spec.args) {
    switch (a.kind) {
      case ArgSpec::Input: ptrs.push_back(b.inputs.at(in++)->ptr()); params.push_back(&ptrs.back()); break;
      case ArgSpec::Output: ptrs.push_back(b.outputs.at(out++)->ptr()); params.push_back(&ptrs.back()); break;
      case ArgSpec::Dim: ints.push_back(int(shape.at(a.dim))); params.push_back(&ints.back()); break;
      case ArgSpec::FloatConst: floats.push_back(a.value); params.push_back(&floats.back()); break;
    }
  }
  const int64_t grid = is_reference_ ? spec.rows(shape) : spec.grid(shape, rows_per_block_);
  return d_->cuLaunchKernel(functions_.at(d), unsigned(grid), 1, 1, unsigned(block_threads_), 1, 1,
                            unsigned(is_reference_ ? 0 : smem_bytes_), s, params.data(), nullptr);
}

}  // namespace ak
