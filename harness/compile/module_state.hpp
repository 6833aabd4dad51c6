#pragma once
/// What a compiled module keeps for itself, read from the cubin's ELF, never from the source
/// text, so no spelling of the source can hide it. State that outlives a launch is how a
/// candidate remembers answers between the harness's checks and its timed launches, and a call
/// out of the module is how it reaches what the harness does not judge, so:
/// - every writable section of the module's global memory (`.nv.global`, `.nv.global.init`:
///   variables, function-local statics, string literals, CUDA headers' helpers, and the padding
///   between them) is located (WritableSection) so that the harness can write it back to its
///   image before every launch and check it unchanged after (harness/module/module_memory.hpp);
/// - what cannot be located or reset is refused: a writable section with no symbol whose address
///   the driver gives, `__managed__` memory (the host's too), a writable section of another kind;
/// - calls to functions outside the module are refused unless allowed (kAllowedExternFunctions):
///   the device heap (`malloc`), device printf (`vprintf`, whose output reaches the operator's
///   console), `assert` (`__assertfail`) and anything else the driver would link in.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ak {

/// One thing the module keeps or calls that a kernel file may not.
struct ModuleState {
  std::string symbol;    ///< as the cubin names it (mangled for C++ names)
  std::string what;      ///< "device printf (vprintf)", "managed memory, 4 bytes"
};

/// Everything in `cubin` that a kernel file may not have; an unreadable cubin is one entry.
std::vector<ModuleState> module_state(const std::vector<char>& cubin);

/// Functions a module may leave for the driver to link: none today. Every undefined function
/// seen in the starters and variants is inlined by NVRTC; a name here must be one that neither
/// keeps state nor writes anywhere the harness does not judge.
extern const std::vector<std::string> kAllowedExternFunctions;

/// A variable in a writable section, to name the place a kernel wrote.
struct SectionSymbol {
  std::string name;
  uint64_t offset = 0, size = 0;
};

/// One writable section of the module's global memory, with its initial image (the file's bytes,
/// or zeros for a zero-initialised section) and a symbol by which the driver gives its address.
struct WritableSection {
  std::string name;                   ///< ".nv.global.init"
  std::vector<char> image;            ///< sh_size bytes
  std::string anchor;                 ///< a symbol in it, for cuModuleGetGlobal
  uint64_t anchor_offset = 0;         ///< where the anchor lies in the section
  std::vector<SectionSymbol> symbols; ///< every symbol in it, named or not ("$str")
  /// "_ZN1KIiE1vE + 4" for an offset inside a symbol, "padding after pad_a" between symbols.
  std::string describe(uint64_t offset) const;
};

/// The module's writable global-memory sections (empty ones left out); an unreadable cubin gives
/// none, and module_state() has refused it already.
std::vector<WritableSection> writable_sections(const std::vector<char>& cubin);

/// The sentence a verdict carries when module_state() is not empty: names each and says why.
std::string describe_module_state(const std::vector<ModuleState>& found);

}  // namespace ak
