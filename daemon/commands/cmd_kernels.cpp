// autokernel kernels: what each kernel type computes and what a kernel file must define.
#include <cstdio>

#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"

namespace ak {

int kernels_command(const Args& args) {
  ArgParser p("autokernel kernels",
              "Lists the kernel types: entry point, shapes, dtypes, tolerances, metric, baseline, and the\n"
              "structures (starter and variants) the builtin tuner switches between.");
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  for (const KernelSpec* s : all_specs()) {
    std::string dtypes, tol;
    for (DType d : s->dtypes) {
      dtypes += (dtypes.empty() ? "" : ", ") + std::string(dtype_name(d));
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %g", tol.empty() ? "" : ", ", dtype_name(d), s->tolerance(d).atol);
      tol += buf;
    }
    const std::string baseline = s->baseline == Baseline::Cublas
                                     ? "cuBLAS (cublasGemmEx, fp32 accumulation) timed on the same GPU, or baseline_us from the config"
                                     : "the starter timed on the same GPU (the plain reference kernel is slower than any "
                                       "starter), or baseline_us from the config";
    std::string structures;
    for (auto& v : kernel_variants(s->type)) structures += (structures.empty() ? "" : ", ") + v.name;
    const std::string validation =
        s->validation_rows > 0 ? std::to_string(s->validation_rows) + " sampled output rows per run, drawn afresh"
                               : "every output element, every run";
    std::printf("%s\n  computes:   %s\n  entry:      %s\n  shape:      [%s], benchmark %s\n  dtypes:     %s\n"
                "  tolerance:  atol = rtol: %s\n  validation: %s\n  metric:     %s\n  baseline:   %s\n  structures: %s\n\n",
                s->type.c_str(), s->summary.c_str(), s->abi().c_str(), s->shape_help().c_str(),
                shape_str(s->bench_shape).c_str(), dtypes.c_str(), tol.c_str(), validation.c_str(),
                s->metric == Metric::GBps ? "GB/s (memory-bound)" : "TFLOPS (compute-bound)", baseline.c_str(),
                structures.c_str());
  }
  return kExitOk;
}

}  // namespace ak
