#pragma once
/// The kernel-file contract (docs/kernel-contract.md), checked on the text before compiling, so
/// that a file breaking it fails with a message that says which rule, not a compiler riddle.
#include <string>
#include <vector>

#include "kernels_cuda/spec.hpp"

namespace ak {

/// Each broken rule, as a sentence; empty when the file keeps the contract.
std::vector<std::string> contract_violations(const std::string& source, const KernelSpec& spec);

/// The template instantiation the harness asks NVRTC for, e.g. "rmsnorm_kernel<__half>".
std::string entry_expression(const KernelSpec& spec, DType d);
/// The reference writes fp32 for validation, and the input dtype when timed as the baseline
/// (so that it moves the same bytes as a candidate).
enum class ReferenceOutput { Fp32, InputDtype };
std::string reference_expression(const KernelSpec& spec, DType d, ReferenceOutput out);
/// Every distinct instantiation of the reference, both outputs, for one compile.
std::vector<std::string> reference_expressions(const KernelSpec& spec);

/// The constants a kernel file exports for the launch: threads per block is required.
inline constexpr const char* kBlockThreadsSymbol = "ak_block_threads";
inline constexpr const char* kRowsPerBlockSymbol = "ak_rows_per_block";
inline constexpr const char* kSmemBytesSymbol = "ak_smem_bytes";
inline constexpr const char* kTileMSymbol = "ak_tile_m";
inline constexpr const char* kTileNSymbol = "ak_tile_n";
/// User types with grid = "elements": output elements per thread (default 1).
inline constexpr const char* kItemsPerThreadSymbol = "ak_items_per_thread";

}  // namespace ak
