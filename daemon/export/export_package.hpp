#pragma once
/// `autokernel export`: the kept kernel files of a run (or one file) as a PyTorch package whose
/// custom ops launch them as the harness did. Two layouts:
///   torch       autokernel_ops/, built at first import with torch.utils.cpp_extension (its README
///               says why), usable from PYTHONPATH or `pip install`
///   hf-kernels  the folders and build.toml of a Hugging Face kernel repository (kernel-builder)
#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace ak {

/// One kernel file to export, with what the run measured of it.
struct ExportedKernel {
  std::string type;
  std::string tag;        ///< its [[kernel]] tag in the run; "" for a single file
  std::string origin;     ///< where the file came from
  std::string source;     ///< the file's text: compiled for the package, never put in it
  std::string shape, dtype;
  double best_us = 0, baseline_us = 0, speedup = 0;  ///< 0 when not measured (a single file)
  std::string baseline;   ///< what baseline_us measured ("cuBLAS", "baseline_us in the config", "the starter", ...)
};

enum class PackageFormat { Torch, HfKernels };

/// A package: relative path -> text.
using PackageFiles = std::map<std::string, std::string>;

/// The kernels a run kept (runs/<name>/state.json and kernels/<tag>.cu), every file of every type,
/// each with the shape and dtype it was tuned at: types in name order, a type's files by weight,
/// the heaviest first (package_files gives a type's files one launcher, which picks a file per call
/// by its shape: daemon/export/package/launch/file_pick.h). A kernel slower than its
/// baseline (the op it would replace, when the config came from plan) is left out unless
/// `include_slower`; a tensor-core file (matmul, fused_mlp, flash_attention), which serves only the
/// shape it was tuned at, also unless it was measured faster than the op it replaces (cuBLAS,
/// PyTorch's, or plan's baseline_us: not the starter). `left_out` says what was not taken, and why.
Result<std::vector<ExportedKernel>> kept_kernels(const std::string& run_dir, bool include_slower,
                                                 std::vector<std::string>& left_out);

/// The package's files: each kernel compiled by NVRTC for each of `archs` as the harness compiles
/// it, its modules embedded as bytes beside autokernel's own launcher, one launcher per type for all
/// of the type's files (in the order given, which is file_pick.h's last tie-break). Types that cannot
/// be exported, and files of another contract version than their type's first, go into `left_out`
/// with the reason; an Error when nothing is left to export, or when a
/// file cannot be launched (no ak_block_threads) or the harness would refuse it.
Result<PackageFiles> package_files(const std::vector<ExportedKernel>& kernels, PackageFormat format,
                                   std::vector<std::string>& left_out, const std::vector<std::string>& archs = {"sm_90a"});

/// Writes the files under `out_dir` (created); files already there and not in the package stay
/// (remove_package_entries clears an earlier export first).
Status write_package(const PackageFiles& files, const std::string& out_dir);

/// The top-level entries a package of either layout is made of (autokernel_ops/, torch-ext/,
/// build.toml, README.md ...): what marks an earlier export in a folder, and what replacing it
/// removes.
const std::vector<std::string>& package_entries();

/// Those of package_entries() that stand in `out_dir` already: writing there would overwrite them.
std::vector<std::string> existing_package_entries(const std::string& out_dir);

/// Removes an earlier export's entries from `out_dir`, so that no module of it is left behind
/// beside the new ones; everything else there (a repository's .git, the user's own files) stays.
Status remove_package_entries(const std::string& out_dir);

}  // namespace ak
