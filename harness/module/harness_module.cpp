#include "harness/module/harness_module.hpp"

#include "harness/compile/nvrtc_compile.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {

Result<HarnessModule> load_harness_module(GpuContext& gpu, const std::string& source, const std::string& filename,
                                          const std::vector<std::string>& name_expressions) {
  CompileRequest req{reference_prelude() + source, filename, name_expressions, gpu.info().arch};
  auto compiled = nvrtc_compile(req);
  if (!compiled) return compiled.error();
  if (!compiled->ok) return error("the harness's own kernels in " + filename + " do not compile (a harness bug): " + compiled->log);
  HarnessModule h;
  auto m = gpu.load(compiled->cubin);
  if (!m) return m.error();
  h.module = std::move(*m);
  for (auto& f : compiled->functions) {
    auto fn = h.module.function(f.lowered_name);
    if (!fn) return fn.error();
    h.functions.push_back(*fn);
    h.lowered_names.push_back(f.lowered_name);
  }
  return h;
}

}  // namespace ak
