#pragma once
/// The host code of an exported kernel: a C function that launches the module NVRTC compiled from
/// a kept kernel file the way the harness does (harness/module/kernel_launch.cpp): loaded with the CUDA
/// driver, the arguments in its spec's order, the launch geometry read from the module's ak_*
/// constants, the grid of kernels_cuda/grid_rules.h, one entry point for each of the spec's dtypes.
/// All of it is autokernel's own code; of the kernel file only the compiled module goes in, as bytes.
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "daemon/export/export_compile.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// Whether `export` can launch this type: the row-wise types and rotary_embedding, whose grids are
/// rules of kernels_cuda/grid_rules.h, and the tensor-core types at the contract versions the
/// package has ops for (matmul 2, fused_mlp 1, flash_attention 1 and 2) whose tile rule and operand
/// views the launcher can write (tensor_core_exportable).
bool exportable(const KernelSpec& spec);

/// matmul, fused_mlp or flash_attention: a type whose launch the tensor-core launcher makes, and
/// whose files each serve only the shape they were tuned at (file_pick.h's pick_exact_file).
bool tensor_core_type(const std::string& type);

/// How a tensor-core launcher sees one buffer as a map would: its row length and its element count,
/// each a product of the shape's dimensions (`cols`, `numel`: their indices, repeated for a power),
/// or the row length as the int argument at `cols_at` of the launcher's `s` (a stride the op
/// computes from its tensors, such as flash_attention's seq stride; -1: `cols` gives it).
struct OperandExtent {
  std::vector<int> cols, numel;
  int cols_at = -1;
};
/// Per argument of the spec, its extent where the argument is a buffer with a row length (one a map
/// may cover) that is such a product at every shape the harness judged; nullopt otherwise.
std::vector<std::optional<OperandExtent>> operand_extents(const KernelSpec& spec);
/// A tensor-core spec whose tile rule grid_rules.h writes (checked against the spec's grid at its
/// stage shapes) and whose every mappable buffer has an extent: its launcher can be generated.
bool tensor_core_exportable(const KernelSpec& spec);
/// The grid rule's call in a generated launcher ("ak_rowwise_blocks(s, 2, m->rows_per_block)"),
/// or "" for a grid no rule describes.
std::string grid_rule_call(const KernelSpec& spec);

/// The ak_* constants a kernel file defines ("ak_block_threads", ...), from its text.
std::vector<std::string> exported_constants(const std::string& kernel_source);

/// launch.h: for each exported type's spec (the version its files declare), the version and the
/// declaration of its launcher,
///   #define AK_CONTRACT_VERSION_<type> <version>
///   const char* launch_<type>(void* const* buffers, const long long* shape, const float* consts,
///                             int dtype, cudaStream_t stream);   // nullptr, or what failed
///   const char* load_<type>();   // loads its modules in the current CUDA context: nullptr, or what failed
///   int files_<type>();                                   // how many files the type carries
///   int pick_<type>(const long long* shape, int dtype);   // the file a launch of that shape takes
///   long long launches_<type>(int file);                  // launches of that file so far
std::string launch_header(const std::vector<const KernelSpec*>& specs);

/// One kept file of a type as its launcher takes it: its text (for its exported constants, never
/// copied) and the shape and dtype it was tuned at ("" when not known: a single file exported alone).
struct TunedFile {
  std::string source;
  std::string shape;  ///< "65536x128", the spec's dimensions in order
  std::string dtype;  ///< "fp16", "bf16", "fp32"
};

/// <type>_module.h: each file's compiled modules as byte arrays, one per architecture, and the
/// lowered name of each dtype's entry point; `files[i]` is the i-th file's modules.
std::string module_header(const KernelSpec& spec, const std::vector<std::vector<ExportedModule>>& files);

/// <type>_launch.cpp: host C++ only, including <type>_module.h, the package's loaded_module.h and
/// file_pick.h; defines launch_<type>, which launches the file whose tuned shape is nearest the
/// call's (file_pick.h states the rule), load_<type>, which loads every file's module (the op calls
/// it at import, outside any graph capture), and pick_<type>, files_<type> and launches_<type>,
/// which say which file serves a shape and how often each did. An Error when a file does not
/// export ak_block_threads.
Result<std::string> launcher_source(const KernelSpec& spec, const std::vector<TunedFile>& files);
/// The launcher of one file of unknown tuned shape.
Result<std::string> launcher_source(const KernelSpec& spec, const std::string& kernel_source);

/// The tuned shape of a file as the launcher compares it: one value per dimension of the spec, or
/// empty when `shape` is not one of the spec's shapes ("" included).
std::vector<long long> tuned_dimensions(const KernelSpec& spec, const std::string& shape);

}  // namespace ak
