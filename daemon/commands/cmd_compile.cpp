// autokernel compile FILE.cu --kernel TYPE [--arch sm_90a]: the compile step alone, no GPU needed.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/commands/kernel_file.hpp"
#include "kernels_cuda/registry.hpp"
#include "harness/compile/candidate_compile.hpp"

namespace ak {

int compile_command(const Args& args) {
  std::string file, type, arch = "sm_90a", user_spec;
  bool json = false;
  ArgParser p("autokernel compile FILE.cu --kernel TYPE|--spec TYPE.toml [--arch sm_90a] [--json]",
              "Checks the kernel-file contract and compiles FILE.cu with NVRTC for every dtype of the\n"
              "type; prints registers, spills and shared memory per entry point, or the compile log.\n"
              "Needs no GPU. FILE 'starter' compiles the type's starter, a variant's name that variant\n"
              "(autokernel kernels lists them). Exit 0 compiled, 1 not.");
  p.positional("FILE.cu", "the kernel file, 'starter', or a variant's name", &file)
      .option("kernel", "TYPE", "the kernel type (autokernel kernels lists them)", &type)
      .option("spec", "TYPE.toml", "a user type's spec (docs/user-types.md)", &user_spec)
      .option("arch", "ARCH", "the GPU architecture, e.g. sm_80, sm_90a (default sm_90a)", &arch)
      .flag("json", "print the result as JSON", &json);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (auto s = use_user_spec(user_spec, type); !s) return std::fprintf(stderr, "autokernel compile: %s\n", s.error().message.c_str()), kExitUsage;
  if (type.empty()) {
    std::fprintf(stderr, "autokernel compile: --kernel TYPE or --spec TYPE.toml is required\n");
    return kExitUsage;
  }
  auto spec = spec_for(type);
  if (!spec) return std::fprintf(stderr, "%s\n", spec.error().message.c_str()), kExitUsage;
  auto source = read_kernel_file(file, **spec);
  if (!source) return std::fprintf(stderr, "%s\n", source.error().message.c_str()), kExitUsage;
  spec = spec_for_file(type, *source);  // the arguments of the version the file follows
  if (!spec) return std::fprintf(stderr, "%s\n", spec.error().message.c_str()), kExitUsage;

  nlohmann::json out{{"file", file}, {"kernel", type}, {"arch", arch}};
  auto compiled = compile_candidate(**spec, *source, file == "starter" ? type + ".cu" : file, arch);
  if (!compiled) return std::fprintf(stderr, "%s\n", compiled.error().message.c_str()), kExitUsage;
  const CompileOutput& output = compiled->output;
  out["ok"] = compiled->ok;
  out["message"] = compiled->message;
  out["log"] = output.log;
  out["seconds"] = output.seconds;
  for (auto& f : output.functions)
    out["functions"].push_back({{"name", f.name_expression}, {"registers", f.registers},
                                {"spill_stores", f.spill_stores}, {"spill_loads", f.spill_loads},
                                {"stack_bytes", f.stack_bytes}, {"static_smem_bytes", f.static_smem_bytes}});
  if (json) {
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (!compiled->ok) {
    std::printf("%s is refused for %s: %s\n", file.c_str(), arch.c_str(), compiled->message.c_str());
    if (!output.log.empty()) std::printf("%s\n", output.log.c_str());
  } else {
    std::printf("%s compiles for %s in %.2f s\n", file.c_str(), arch.c_str(), output.seconds);
    for (auto& f : output.functions)
      if (f.registers < 0)
        std::printf("  %-34s (this NVRTC reports no ptxas statistics; bench reads them from the driver)\n",
                    f.name_expression.c_str());
      else
        std::printf("  %-34s %3d registers, %d bytes spilled, %d bytes static shared memory\n", f.name_expression.c_str(),
                    f.registers, f.spill_stores + f.spill_loads, f.static_smem_bytes);
    if (!output.log.empty()) std::printf("compiler said:\n%s\n", output.log.c_str());
  }
  return out["ok"].get<bool>() ? kExitOk : kExitFailure;
}

}  // namespace ak
