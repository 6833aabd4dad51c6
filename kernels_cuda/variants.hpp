#pragma once
/// The structures of a kernel type: its starter, and the variants in kernels_cuda/<type>/variants/,
/// complete kernel files that change how the work is laid out (the row in registers, an online
/// pass, mma.sync) where the starter's knobs cannot. The builtin tuner switches between them; the
/// LLM's prompt lists their names and stories.
#include <string>
#include <vector>

namespace ak {

struct KernelVariant {
  std::string name;              ///< "starter", or the file's name without .cu
  std::string story;             ///< one line: what the structure changes
  const std::string* source = nullptr;
};

/// The starter first, then the variants by file name; empty for an unknown type.
std::vector<KernelVariant> kernel_variants(const std::string& type);

/// The structure a kernel file says it is: <name> from a first line
/// "// <type> variant <name>: <story>", else "starter" (the starters, and files edited from them).
std::string variant_name(const std::string& source);

}  // namespace ak
