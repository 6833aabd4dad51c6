// autokernel export: the kept kernels of a run, or one kernel file, as a PyTorch package.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/text_escape.hpp"
#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/commands/foreground_command.hpp"
#include "daemon/commands/kernel_file.hpp"
#include "daemon/export/export_package.hpp"
#include "daemon/export/op_namespace.hpp"

namespace ak {
namespace fs = std::filesystem;
namespace {

/// What build_variant.py's exit status 3 says: the machine lacks what the build needs.
constexpr int kBuildMissing = 3;

/// Builds build/<variant>/ of an hf-kernels export in `out` with the package's build_variant.py:
/// the extension from the package's own C++, under an op namespace of this build. The exit code
/// of export: 0, 2 where the machine lacks what the build needs (said, with what to do), 1 where
/// the build failed.
int build_variant(const std::string& python, const std::string& out, const PackageFiles& files) {
  const std::string ns = build_op_namespace(files);
  const std::string repo = fs::absolute(out).string();  // never read as an option, whatever its name
  const std::string script = (fs::path(repo) / "build_variant.py").string();
  std::fflush(stdout);  // what export wrote, before the build's own output
  const int rc = run_foreground({python, script, "--repo", repo, "--namespace", ns}, {}, "export");
  if (rc == 0) return kExitOk;
  const std::string rebuild = python + " " + script;
  if (rc == kBuildMissing || rc == 127)
    return std::fprintf(stderr, "autokernel export: the source layout is written to %s, but not build/<variant>/, which the "
                                "kernels library loads: %s. Install what is missing and run `%s`, or export with "
                                "--source-only for the source layout alone\n",
                        terminal_safe(out).c_str(), rc == 127 ? ("cannot run " + terminal_safe(python) + " (give --python PATH)").c_str()
                                                              : "this machine lacks what the build needs (said above)",
                        terminal_safe(rebuild).c_str()), kExitUsage;
  return std::fprintf(stderr, "autokernel export: building build/<variant>/ failed (exit %d); `%s --verbose` shows the "
                              "compiler's output\n", rc, terminal_safe(rebuild).c_str()), kExitFailure;
}

}  // namespace

int export_command(const Args& args) {
  std::string run, out, kernel, format = "torch", file, arch_list = "sm_90a";
  std::string python = "python3";
  bool include_slower = false, force = false, source_only = false;
  ArgParser p("autokernel export (--run DIR | FILE.cu --kernel TYPE) --out DIR [--format torch|hf-kernels] [--arch sm_90a,...] [--force] [--source-only] [--python PATH]",
              "Compiles the kernel files a run kept (every file of a type, each with the shape it was tuned at:\n"
              "a call launches the file tuned nearest its shape), or one kernel file, as the harness does (NVRTC,\n"
              "in its sandbox), and writes the compiled modules into a PyTorch package whose custom ops launch\n"
              "them as the harness did (torch.ops.autokernel.<type>), with a patch that puts them into a model\n"
              "(autokernel_ops.patched()).\n"
              "The package holds no kernel source. The row-wise types are exported; others are listed as left out.\n"
              "--format hf-kernels writes a Hugging Face kernel repository instead: its source layout, and the\n"
              "variant the kernels library loads, built here for this machine's PyTorch (build/<variant>/; it\n"
              "needs PyTorch with CUDA, a C++ compiler, ninja and CUDA's headers: --source-only skips it). A folder that\n"
              "holds an earlier export (of either layout) is not written into without --force, which removes the\n"
              "earlier package's files and folders first; other files in DIR stay.");
  p.positional("FILE.cu", "one kernel file to export (with --kernel), 'starter' or a variant's name", &file, false)
      .option("run", "DIR", "a run folder (runs/<name>): export what it kept", &run)
      .option("kernel", "TYPE", "the kernel type of FILE.cu", &kernel)
      .option("out", "DIR", "where to write the package (created)", &out)
      .option("format", "torch|hf-kernels", "the package's layout (default torch)", &format)
      .option("arch", "ARCHS", "the GPU architectures to compile for, comma-separated (default sm_90a, the H100's)", &arch_list)
      .flag("include-slower", "also export a kept kernel slower than its baseline", &include_slower)
      .flag("force", "replace an earlier export in DIR (its package files are removed first)", &force)
      .flag("source-only", "hf-kernels: write the source layout alone, without building build/<variant>/", &source_only)
      .option("python", "PATH", "hf-kernels: the Python with PyTorch that builds the variant (default python3)", &python);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (out.empty()) return std::fprintf(stderr, "autokernel export: give --out DIR\n"), kExitUsage;
  if (run.empty() == file.empty())
    return std::fprintf(stderr, "autokernel export: give either --run DIR or one FILE.cu with --kernel TYPE\n"), kExitUsage;
  if (format != "torch" && format != "hf-kernels")
    return std::fprintf(stderr, "autokernel export: --format %s: expected torch or hf-kernels\n", format.c_str()), kExitUsage;
  if (source_only && format != "hf-kernels")
    return std::fprintf(stderr, "autokernel export: --source-only is for --format hf-kernels (the torch layout is sources alone)\n"), kExitUsage;
  if (std::error_code ec; fs::exists(out, ec) && !fs::is_directory(out, ec))
    return std::fprintf(stderr, "autokernel export: --out %s is a file: give a folder for the package\n",
                        terminal_safe(out).c_str()), kExitUsage;
  if (auto earlier = existing_package_entries(out); !earlier.empty() && !force) {
    std::string names;
    for (auto& e : earlier) names += (names.empty() ? "" : ", ") + e;
    return std::fprintf(stderr, "autokernel export: --out %s holds an earlier export (%s): give --force to replace it "
                                "(its package files are removed first, other files stay), or another --out\n",
                        terminal_safe(out).c_str(), names.c_str()), kExitUsage;
  }
  std::vector<std::string> left_out;
  std::vector<ExportedKernel> kernels;
  if (!run.empty()) {
    auto kept = kept_kernels(run, include_slower, left_out);
    if (!kept) return std::fprintf(stderr, "autokernel export: %s\n", kept.error().message.c_str()), kExitUsage;
    kernels = *kept;
  } else {
    auto spec = spec_for(kernel);
    if (!spec) return std::fprintf(stderr, "autokernel export: --kernel: %s\n", spec.error().message.c_str()), kExitUsage;
    auto source = read_kernel_file(file, **spec);
    if (!source) return std::fprintf(stderr, "autokernel export: %s\n", source.error().message.c_str()), kExitUsage;
    kernels.push_back({kernel, "", file, *source, "", "", 0, 0, 0});
  }
  std::vector<std::string> archs;
  for (size_t at = 0; at <= arch_list.size();) {
    size_t comma = std::min(arch_list.find(',', at), arch_list.size());
    if (comma > at) archs.push_back(arch_list.substr(at, comma - at));
    at = comma + 1;
  }
  if (archs.empty()) return std::fprintf(stderr, "autokernel export: --arch: give at least one, e.g. sm_90a\n"), kExitUsage;
  auto files = package_files(kernels, format == "torch" ? PackageFormat::Torch : PackageFormat::HfKernels, left_out, archs);
  for (auto& l : left_out) std::fprintf(stderr, "autokernel export: left out %s\n", l.c_str());
  if (!files) return std::fprintf(stderr, "autokernel export: %s\n", files.error().message.c_str()), kExitFailure;
  if (auto s = force ? remove_package_entries(out) : ok(); !s)
    return std::fprintf(stderr, "autokernel export: %s\n", s.error().message.c_str()), kExitFailure;
  if (auto s = write_package(*files, out); !s)
    return std::fprintf(stderr, "autokernel export: %s\n", s.error().message.c_str()), kExitFailure;
  std::printf("wrote %zu files to %s (%s layout, compiled for %s):\n", files->size(), out.c_str(), format.c_str(),
              arch_list.c_str());
  for (auto& k : kernels)
    if (files->count((format == "torch" ? "autokernel_ops/csrc/" : "autokernel_ops_cuda/") + k.type + "_module.h"))
      std::printf("  %-18s from %s\n", k.type.c_str(), k.origin.c_str());
  if (format == "hf-kernels" && !source_only)
    if (int rc = build_variant(python, out, *files); rc != kExitOk) return rc;
  if (format == "hf-kernels")
    std::printf("use it: kernels.get_local_kernel(Path(\"%s\")) loads build/<variant>/ (README.md there), or check it:\n"
                "        autokernel verify --model M.py --ops %s\n", out.c_str(), out.c_str());
  if (format == "torch")
    std::printf("use it: PYTHONPATH=%s python3 -c 'import autokernel_ops' (builds at first import), then\n"
                "        with autokernel_ops.patched(): model(x)     or check it: autokernel verify --model M.py --ops %s\n",
                out.c_str(), out.c_str());
  return kExitOk;
}

}  // namespace ak
