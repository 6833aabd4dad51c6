#include "daemon/export/export_package.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"
#include "common/format.hpp"
#include "daemon/export/export_compile.hpp"
#include "daemon/export/kernel_launcher.hpp"
#include "daemon/run_folder/run_directory.hpp"
#include "daemon/run_folder/state_file.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"

namespace ak {
const std::map<std::string, std::string>& embedded_python();
namespace fs = std::filesystem;
namespace {

constexpr const char* kPackage = "autokernel_ops";

const std::string& packaged(const std::string& path) { return embedded_python().at("daemon/export/package/" + path); }

/// What the harness validated a type on: the shapes of its five stages, its dtypes and tolerances.
nlohmann::json validation(const KernelSpec& spec) {
  std::vector<std::string> shapes{shape_str(spec.smoke_shape)};
  for (auto& s : spec.sweep_shapes) shapes.push_back(shape_str(s));
  shapes.push_back(shape_str(spec.stability_shape));
  shapes.push_back(shape_str(spec.determinism_shape));
  for (auto& s : spec.edge_shapes) shapes.push_back(shape_str(s));
  nlohmann::json tolerance;
  for (DType d : spec.dtypes) tolerance[dtype_name(d)] = spec.tolerance(d).atol;
  return {{"stage_shapes", shapes}, {"stability_shape", shape_str(spec.stability_shape)},
          {"determinism_shape", shape_str(spec.determinism_shape)}, {"tolerance", tolerance}, {"shape_names", spec.shape_names}};
}

/// The structure a kernel follows, when it names one of its type's known variants on its first line;
/// "other" otherwise: the first line is the kernel's own text, and the package takes none of it.
std::string structure(const ExportedKernel& k) {
  const std::string name = variant_name(k.source);
  for (auto& v : kernel_variants(k.type))
    if (v.name == name) return name;
  return "other";
}

/// The spec a kept file was judged against: the contract version it declares.
Result<const KernelSpec*> spec_of(const ExportedKernel& k) {
  auto spec = spec_for_file(k.type, k.source);
  if (!spec) return error(k.origin + ": " + spec.error().message);
  return spec;
}

/// The op's C++ for the kernel's contract version: ops/<type>_v<N>.cpp where an older version's op
/// takes other arguments (rotary_embedding's version 1), else ops/<type>.cpp, which reads the
/// version from launch.h (AK_CONTRACT_VERSION_<type>) where the meaning of its arguments changed.
std::string op_source(const ExportedKernel& k) {
  const int version = (**spec_of(k)).contract_version;
  auto it = embedded_python().find("daemon/export/package/ops/" + k.type + "_v" + std::to_string(version) + ".cpp");
  return it != embedded_python().end() ? it->second : packaged("ops/" + k.type + ".cpp");
}

/// The kernels grouped by type, in the order of their first file; within a type in the order given
/// (kept_kernels lists a type's files by weight, the heaviest first).
std::vector<std::vector<const ExportedKernel*>> by_type(const std::vector<ExportedKernel>& kernels) {
  std::vector<std::vector<const ExportedKernel*>> groups;
  for (auto& k : kernels) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.front()->type == k.type; });
    if (it == groups.end()) groups.push_back({&k});
    else it->push_back(&k);
  }
  return groups;
}

/// One file's entry in the manifest: where it came from, what it was tuned at and measured, and
/// its compiled modules.
nlohmann::json file_entry(const ExportedKernel& k, const std::vector<ExportedModule>& modules) {
  const KernelSpec& spec = **spec_of(k);  // common_files has refused a file without one
  nlohmann::json compiled = nlohmann::json::array(), tuned = nlohmann::json::array();
  for (auto& m : modules) compiled.push_back({{"arch", m.arch}, {"bytes", m.cubin.size()}});
  if (auto dims = tuned_dimensions(spec, k.shape); !dims.empty()) tuned.push_back(dims);
  return {{"structure", structure(k)}, {"tag", k.tag}, {"origin", k.origin}, {"modules", compiled},
          {"entries", modules.front().entries}, {"shape", k.shape}, {"dtype", k.dtype}, {"tuned_shapes", tuned},
          {"best_us", k.best_us}, {"baseline_us", k.baseline_us}, {"speedup", k.speedup}};
}

/// One entry per type, with its first file's fields as an export of one file per type had them
/// (so that a reader of that schema still finds them), and "files": every file of the type, in
/// the launcher's order (the index pick_<type> and <type>_launches answer with).
nlohmann::json manifest(const std::vector<ExportedKernel>& kernels, const std::map<std::string, std::vector<std::vector<ExportedModule>>>& modules,
                        const std::vector<std::string>& left_out) {
  nlohmann::json ops = nlohmann::json::array();
  for (auto& group : by_type(kernels)) {
    const ExportedKernel& k = *group.front();
    const KernelSpec& spec = **spec_of(k);
    nlohmann::json op = file_entry(k, modules.at(k.type).front());
    op["type"] = k.type;
    op["contract_version"] = spec.contract_version;
    op["validated"] = validation(spec);
    op["files"] = nlohmann::json::array();
    for (size_t i = 0; i < group.size(); ++i) op["files"].push_back(file_entry(*group[i], modules.at(k.type).at(i)));
    ops.push_back(op);
  }
  const int cuda = nvrtc_cuda_version();
  return {{"schema", "autokernel-export-2"}, {"ops", ops}, {"left_out", left_out},
          {"compiled_by", "NVRTC " + std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10)},
          {"driver_needs_cuda", std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10)}};
}

std::string readme(const std::vector<ExportedKernel>& kernels, PackageFormat format) {
  std::string table = "| op | structure | measured at | dtype | best µs | baseline µs | speedup |\n|---|---|---|---|---|---|---|\n";
  for (auto& k : kernels)
    table += "| `torch.ops.autokernel." + k.type + "` | " + structure(k) + " | " + (k.shape.empty() ? "-" : k.shape) +
             " | " + (k.dtype.empty() ? "-" : k.dtype) + " | " + (k.best_us > 0 ? format_numbers("%.2f", k.best_us) : "-") +
             " | " + (k.baseline_us > 0 ? format_numbers("%.2f", k.baseline_us) : "-") + " | " +
             (k.speedup > 0 ? format_numbers("%.3fx", k.speedup) : "-") + " |\n";
  std::string text = packaged("README.md");
  const std::string mark = "{{ops}}";
  text.replace(text.find(mark), mark.size(), table);
  if (format == PackageFormat::HfKernels)
    text += packaged("hf/README.md");
  return text;
}

/// The files both layouts share, under `py` (the Python package) and `csrc` (the C++): for each
/// type its files' compiled modules and one launcher for them all; of the kernel files' text, nothing.
Result<PackageFiles> common_files(const std::vector<ExportedKernel>& kernels, const std::vector<std::string>& archs,
                                  const std::string& py, const std::string& csrc,
                                  std::map<std::string, std::vector<std::vector<ExportedModule>>>& modules) {
  PackageFiles files;
  std::vector<const KernelSpec*> specs;
  for (auto& group : by_type(kernels)) {
    const std::string& type = group.front()->type;
    std::vector<TunedFile> tuned;
    const KernelSpec* spec = nullptr;
    for (const ExportedKernel* k : group) {
      auto found = spec_of(*k);
      if (!found) return found.error();
      if (!spec) spec = *found;
      // What the launcher needs of the file, said with the file's name, before the compile.
      if (auto alone = launcher_source(**found, k->source); !alone) return error(k->origin + ": " + alone.error().message);
      auto compiled = compile_for_export(**found, k->source, k->origin, archs);
      if (!compiled) return compiled.error();
      modules[type].push_back(std::move(*compiled));
      tuned.push_back({k->source, k->shape, k->dtype});
    }
    auto launcher = launcher_source(*spec, tuned);
    if (!launcher) return error(group.front()->origin + ": " + launcher.error().message);
    files[csrc + type + "_module.h"] = module_header(*spec, modules[type]);
    files[csrc + type + "_launch.cpp"] = *launcher;
    specs.push_back(spec);
  }
  files[csrc + "launch.h"] = launch_header(specs);
  files[csrc + "loaded_module.h"] = packaged("launch/loaded_module.h");
  files[csrc + "file_pick.h"] = packaged("launch/file_pick.h");
  files[csrc + "grid_rules.h"] = embedded_python().at("kernels_cuda/grid_rules.h");
  files[csrc + "tensor_map_rules.h"] = embedded_python().at("kernels_cuda/tensor_map_rules.h");
  files[csrc + "grid_launch_rules.h"] = embedded_python().at("kernels_cuda/grid_launch_rules.h");
  files[csrc + "tiled_launch.h"] = packaged("launch/tiled_launch.h");
  for (const char* f : {"_patch.py", "_replacements.py", "_fakes.py", "_modules.py", "_compile_decision.py", "_timing.py", "_graphs.py", "_served.py"}) files[py + f] = packaged(std::string(kPackage) + "/" + f);
  return files;
}

/// "9.0" from "sm_90a": the compute capability an architecture is for.
std::string capability(const std::string& arch) {
  std::string digits;
  for (char c : arch) if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  return digits.size() < 2 ? arch : digits.substr(0, digits.size() - 1) + "." + digits.back();
}

/// Why a tensor-core file does not serve its shape: it was not measured faster than what it would
/// replace there ("" when it was, and for the other types, whose rule is kept_kernels' own). Its op
/// replaces a library call (cuBLAS, SDPA) that a model makes at every shape, so a file serves only
/// the shape it beat that call at; a speedup over the starter says nothing of the library.
std::string tensor_core_not_faster(const ExportedKernel& k) {
  if (!tensor_core_type(k.type)) return "";
  const bool library = k.baseline == "cuBLAS" || k.baseline == "PyTorch eager" || k.baseline == "baseline_us in the config";
  if (!library)
    return "its speedup is against " + (k.baseline.empty() ? std::string("no recorded baseline") : k.baseline) +
           ", not the op it would replace (cuBLAS, PyTorch's, or plan's baseline_us)";
  if (!(k.speedup > 1))
    return format_numbers("%.3fx its baseline", k.speedup) + " (" + k.baseline + "), not faster at " +
           (k.shape.empty() ? std::string("its shape") : k.shape);
  return "";
}

}  // namespace

Result<std::vector<ExportedKernel>> kept_kernels(const std::string& run_dir, bool include_slower,
                                                 std::vector<std::string>& left_out) {
  auto state = read_state_file(run_dir + "/state.json");
  if (!state) return state.error();
  if (!state->contains("kernels"))
    return error(run_dir + " is not a run folder (no state.json listing kernels): give the folder autokernel run wrote, e.g. runs/<name>");
  const RunDirectory run(run_dir);
  std::vector<std::pair<double, ExportedKernel>> kept;  // (weight, kernel)
  for (auto& k : (*state)["kernels"]) {
    ExportedKernel e;
    e.type = k.value("type", "");
    e.tag = k.value("tag", "");
    e.origin = run.path(run.kernel_file(e.tag));
    auto source = read_file_text(e.origin);
    if (!source) {
      // A kernel whose starter failed its checks keeps no file: the run's other kernels still
      // export, and the reason the run gave is said.
      const std::string why = k.value("converged", std::string());
      left_out.push_back(e.tag + ": the run kept no file (" + (why.empty() ? source.error().message : why) + "): left out");
      continue;
    }
    e.source = *source;
    e.shape = k.value("shape", "");
    e.dtype = k.value("dtype", "");
    e.best_us = k.value("best_us", 0.0);
    e.baseline_us = k.value("baseline_us", 0.0);
    e.speedup = k.value("speedup", 0.0);
    e.baseline = k.value("baseline", "");
    if (std::string why = tensor_core_not_faster(e); !why.empty() && !include_slower) {
      left_out.push_back(e.tag + ": " + why + ": left out (--include-slower exports it)");
      continue;
    }
    if (e.speedup > 0 && e.speedup < 1 && !include_slower) {
      left_out.push_back(e.tag + format_numbers(": %.3fx its baseline, slower: left out (--include-slower exports it)", e.speedup));
      continue;
    }
    kept.emplace_back(k.value("weight", 1.0), std::move(e));
  }
  // Every kept file of a type, each tuned at its own shape: types in name order, a type's files by
  // weight, the heaviest first (file_pick.h's last tie-break).
  std::stable_sort(kept.begin(), kept.end(), [](auto& a, auto& b) {
    return a.second.type != b.second.type ? a.second.type < b.second.type : a.first > b.first;
  });
  std::vector<ExportedKernel> out;
  for (auto& [weight, k] : kept) out.push_back(std::move(k));
  if (out.empty()) return error(run_dir + "/state.json lists no kernel to export");
  return out;
}

Result<PackageFiles> package_files(const std::vector<ExportedKernel>& all, PackageFormat format, std::vector<std::string>& left_out,
                                   const std::vector<std::string>& archs) {
  std::vector<ExportedKernel> kernels;
  for (auto& k : all) {
    if (!find_spec(k.type)) return error(k.origin + ": '" + k.type + "' is not a kernel type of this build");
    auto spec = spec_of(k);
    if (!spec) return spec.error();
    auto first = std::find_if(kernels.begin(), kernels.end(), [&](const ExportedKernel& e) { return e.type == k.type; });
    if (!exportable(**spec))
      left_out.push_back((k.tag.empty() ? k.type : k.tag) + ": " + k.type + " version " +
                         std::to_string((**spec).contract_version) +
                         " is not exported (the package has ops for the row-wise types, matmul version 2, fused_mlp "
                         "version 1 and flash_attention versions 1 and 2)");
    else if (first != kernels.end() && (**spec_of(*first)).contract_version != (**spec).contract_version)
      // One op per type: its arguments mean what one version of the contract says.
      left_out.push_back((k.tag.empty() ? k.type : k.tag) + ": follows version " + std::to_string((**spec).contract_version) +
                         " of the " + k.type + " contract, the type's first file version " +
                         std::to_string((**spec_of(*first)).contract_version) + ": left out");
    else
      kernels.push_back(k);
  }
  if (kernels.empty()) return error("nothing to export: none of the kernels is of a type the package has an op for (rmsnorm, "
                                    "layernorm, softmax, rotary_embedding, cross_entropy, reduce, swiglu, matmul version 2, "
                                    "fused_mlp, flash_attention)");
  const bool hf = format == PackageFormat::HfKernels;
  const std::string py = hf ? "torch-ext/autokernel_ops/" : "autokernel_ops/";
  const std::string csrc = hf ? "autokernel_ops_cuda/" : "autokernel_ops/csrc/";
  const std::string ops_dir = hf ? "torch-ext/ops/" : csrc;
  std::map<std::string, std::vector<std::vector<ExportedModule>>> modules;
  auto files = common_files(kernels, archs, py, csrc, modules);
  if (!files) return files.error();
  PackageFiles& f = *files;
  f[ops_dir + "common.h"] = packaged("ops/common.h");
  f[ops_dir + "rotary_tables.h"] = packaged("ops/rotary_tables.h");  // the rotary op's file of each version holds it
  for (auto& group : by_type(kernels)) f[ops_dir + group.front()->type + ".cpp"] = op_source(*group.front());
  f[py + "manifest.json"] = manifest(kernels, modules, left_out).dump(2) + "\n";
  f["README.md"] = readme(kernels, format);
  if (!hf) {
    for (const char* p : {"__init__.py", "_load.py", "verify.py"}) f[py + p] = packaged(std::string(kPackage) + "/" + p);
    f[csrc + "direct_call.h"] = packaged("ops/direct_call.h");  // the extension's Python module
    f["pyproject.toml"] = packaged("pyproject.toml");
    return files;
  }
  f[ops_dir + "direct_call.h"] = packaged("ops/direct_call.h");  // the layers' eager calls (common.h)
  f[py + "__init__.py"] = packaged("hf/__init__.py");
  f[py + "layers.py"] = packaged("hf/layers.py");   // what kernelize swaps into a model
  f[py + "verify.py"] = packaged(std::string(kPackage) + "/verify.py");  // autokernel verify on a built variant
  f["build_variant.py"] = packaged("hf/build_variant.py");  // build/<variant>/: what the kernels library loads
  f["build.toml"] = packaged("hf/build.toml");
  f["flake.nix"] = packaged("hf/flake.nix");
  f["torch-ext/torch_binding.cpp"] = packaged("hf/torch_binding.cpp");
  f["torch-ext/torch_binding.h"] = packaged("hf/torch_binding.h");
  f[ops_dir + "ops_namespace.h"] = "// The ops register under kernel-builder's extension name.\n#define AK_OPS_NAMESPACE TORCH_EXTENSION_NAME\n";
  // build.toml lists the sources of this export: the launchers and the compiled modules they
  // include, host C++ all of them; there is no .cu to compile.
  std::string torch_src, cuda_src, capabilities;
  for (auto& group : by_type(kernels)) {
    const std::string& type = group.front()->type;
    torch_src += ", \"" + ops_dir + type + ".cpp\"";
    cuda_src += ", \"" + csrc + type + "_launch.cpp\", \"" + csrc + type + "_module.h\"";
  }
  for (auto& a : archs) capabilities += std::string(capabilities.empty() ? "" : ", ") + "\"" + capability(a) + "\"";
  std::string& toml = f["build.toml"];
  for (auto [mark, value] : {std::pair<std::string, std::string>{"{{torch_src}}", torch_src}, {"{{cuda_src}}", cuda_src},
                             {"{{capabilities}}", capabilities}})
    toml.replace(toml.find(mark), mark.size(), value);
  return files;
}

Status write_package(const PackageFiles& files, const std::string& out_dir) {
  for (auto& [rel, text] : files) {
    const fs::path p = fs::path(out_dir) / rel;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec) return error("cannot create " + p.parent_path().string() + ": " + ec.message());
    if (auto s = write_file_atomic(p.string(), text); !s) return s;
  }
  return ok();
}

const std::vector<std::string>& package_entries() {
  static const std::vector<std::string> entries{"autokernel_ops", "pyproject.toml", "README.md", "torch-ext",
                                                "autokernel_ops_cuda", "build.toml", "flake.nix",
                                                "build_variant.py", "build"};
  return entries;
}

std::vector<std::string> existing_package_entries(const std::string& out_dir) {
  std::vector<std::string> out;
  for (auto& e : package_entries()) {
    std::error_code ec;
    if (fs::symlink_status(fs::path(out_dir) / e, ec).type() != fs::file_type::not_found && !ec) out.push_back(e);
  }
  return out;
}

Status remove_package_entries(const std::string& out_dir) {
  for (auto& e : existing_package_entries(out_dir)) {
    std::error_code ec;
    fs::remove_all(fs::path(out_dir) / e, ec);
    if (ec)
      return error("cannot remove the earlier export's " + (fs::path(out_dir) / e).string() + ": " + ec.message() +
                   " (remove it by hand, or export into another --out)");
  }
  return ok();
}

}  // namespace ak
