#pragma once
/// What a compiled module keeps for itself, read from the cubin's ELF symbol table, never from
/// the source text, so no spelling of the source can hide it. State that outlives a launch is how
/// a candidate remembers answers between the harness's checks and its timed launches, so:
/// - zero-initialised device memory (`__device__` and `__managed__` variables without an
///   initialiser, function-local statics) and calls into the device heap are refused;
/// - initialised device memory cannot be refused, since NVRTC places every namespace-scope
///   `const` and `constexpr` variable there, so it is written back to its initial image before
///   every launch (InitializedVariable): whatever a launch writes there, the next one never sees;
/// - string literals in device code (printf, assert) live there too but have no name to find
///   them by, so they cannot be written back: they are refused.
#include <string>
#include <cstddef>
#include <vector>

namespace ak {

/// One thing the module keeps that a kernel file may not.
struct ModuleState {
  std::string symbol;    ///< as the cubin names it (mangled for C++ names)
  std::string what;      ///< "writable device memory, 4096 bytes", "device heap (malloc)"
};

/// Everything in `cubin` that outlives a launch; an unreadable cubin is reported as one entry.
std::vector<ModuleState> module_state(const std::vector<char>& cubin);

/// One initialised variable of a module (.nv.global.init): its name, by which the driver gives
/// its address, and its initial bytes from the cubin.
struct InitializedVariable {
  std::string name;
  std::vector<char> image;
};
std::vector<InitializedVariable> initialized_memory(const std::vector<char>& cubin);

/// The sentence a verdict carries when module_state() is not empty: names each and says why.
std::string describe_module_state(const std::vector<ModuleState>& found);

}  // namespace ak
