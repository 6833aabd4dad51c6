#pragma once
/// Which of autokernel's kernel types a GPU kernel found in a profile is, from its (demangled)
/// name alone, and whether it is memory- or compute-bound. The patterns are documented in
/// docs/profiling.md; anything unmatched is "other".
#include <string>

namespace ak {

struct Classification {
  std::string type;    ///< "matmul", "softmax", ..., or "other"
  std::string bound;   ///< "memory" or "compute"
  std::string rule;    ///< the pattern that matched, for the report
};

Classification classify_kernel(const std::string& demangled_name);

/// "half" / "bf16" / "float" hints in a kernel name, as fp16 / bf16 / fp32; "" when none.
std::string dtype_hint(const std::string& demangled_name);

/// The demangled form of a C++ symbol; the name itself when it is not mangled.
std::string demangle(const std::string& name);

}  // namespace ak
