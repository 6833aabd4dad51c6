#include "harness/compile/module_state.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>

namespace ak {
namespace {

/// A bounds-checked view of the cubin: a hostile file's module is parsed here, so nothing may
/// be trusted, offsets included.
struct Bytes {
  const std::vector<char>& b;
  template <typename T>
  bool read(size_t off, T& out) const {
    if (off > b.size() || b.size() - off < sizeof(T)) return false;
    std::memcpy(&out, b.data() + off, sizeof(T));
    return true;
  }
  std::string str(size_t table_off, size_t table_size, size_t at) const {
    if (at >= table_size || table_off + table_size > b.size()) return "?";
    const char* s = b.data() + table_off + at;
    return std::string(s, strnlen(s, table_size - at));
  }
};

bool is_heap_function(const std::string& name) {
  return name == "malloc" || name == "free" || name == "__nv_aligned_device_malloc" || name == "calloc" ||
         name == "realloc";
}

std::string what_extern_call_is(const std::string& name) {
  if (is_heap_function(name)) return "device heap (" + name + ")";
  if (name == "vprintf") return "device printf (vprintf): its output would reach the operator's console";
  if (name == "__assertfail") return "assert (__assertfail): its message would reach the operator's console";
  return "a call to " + name + ", outside the module";
}

/// Global memory a launch can write: the sections the harness locates, resets and checks.
bool is_global_memory(const std::string& section) { return section == ".nv.global" || section == ".nv.global.init"; }

/// Per-block and per-thread memory: it starts undefined at every launch and ends with it.
bool is_launch_local(const std::string& section) {
  return section.rfind(".nv.shared", 0) == 0 || section.rfind(".nv.local", 0) == 0;
}

/// The symbol attribute NVRTC sets on `__managed__` variables.
constexpr unsigned char kManagedAttribute = 0x4;

/// The cubin's sections and symbols, each symbol with the name of its section.
struct Elf {
  std::vector<Elf64_Shdr> sections;
  std::vector<std::string> section_names;
  struct Symbol {
    std::string name, section;
    Elf64_Sym sym;
  };
  std::vector<Symbol> symbols;
  std::string problem;   ///< why the cubin could not be read; empty when it could
};

Elf read_elf(const std::vector<char>& cubin) {
  Bytes in{cubin};
  Elf elf;
  Elf64_Ehdr eh;
  if (!in.read(0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
    elf.problem = "not a 64-bit ELF cubin: its state cannot be checked, so it is refused";
    return elf;
  }
  elf.sections.resize(eh.e_shnum);
  for (size_t i = 0; i < elf.sections.size(); ++i)
    if (!in.read(size_t(eh.e_shoff) + i * sizeof(Elf64_Shdr), elf.sections[i])) {
      elf.problem = "a section header lies outside the cubin";
      return elf;
    }
  auto section_name = [&](size_t i) {
    if (eh.e_shstrndx >= elf.sections.size() || i >= elf.sections.size()) return std::string("?");
    const Elf64_Shdr& names = elf.sections[eh.e_shstrndx];
    return in.str(size_t(names.sh_offset), size_t(names.sh_size), elf.sections[i].sh_name);
  };
  for (size_t i = 0; i < elf.sections.size(); ++i) elf.section_names.push_back(section_name(i));
  for (const Elf64_Shdr& symtab : elf.sections) {
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= elf.sections.size()) continue;
    const Elf64_Shdr& strtab = elf.sections[symtab.sh_link];
    for (size_t off = 0; off + sizeof(Elf64_Sym) <= symtab.sh_size; off += sizeof(Elf64_Sym)) {
      Elf::Symbol s;
      if (!in.read(size_t(symtab.sh_offset) + off, s.sym)) {
        elf.problem = "a symbol lies outside the cubin";
        return elf;
      }
      s.name = in.str(size_t(strtab.sh_offset), size_t(strtab.sh_size), s.sym.st_name);
      if (s.sym.st_shndx != SHN_UNDEF && s.sym.st_shndx < elf.sections.size()) s.section = section_name(s.sym.st_shndx);
      elf.symbols.push_back(std::move(s));
    }
  }
  return elf;
}

}  // namespace

const std::vector<std::string> kAllowedExternFunctions = {};

std::vector<ModuleState> module_state(const std::vector<char>& cubin) {
  Elf elf = read_elf(cubin);
  if (!elf.problem.empty()) return {{"(module)", elf.problem}};
  std::vector<ModuleState> found;
  for (auto& s : elf.symbols) {
    const int type = ELF64_ST_TYPE(s.sym.st_info);
    const bool allowed = std::find(kAllowedExternFunctions.begin(), kAllowedExternFunctions.end(), s.name) !=
                         kAllowedExternFunctions.end();
    if (type == STT_FUNC && s.sym.st_shndx == SHN_UNDEF && !allowed)
      found.push_back({s.name, what_extern_call_is(s.name)});
    else if (type == STT_OBJECT && is_global_memory(s.section) && (s.sym.st_other & kManagedAttribute))
      found.push_back({s.name, "managed memory, " + std::to_string(s.sym.st_size) + " bytes, which the host shares"});
  }
  for (size_t i = 0; i < elf.sections.size(); ++i) {
    const Elf64_Shdr& sec = elf.sections[i];
    const std::string& name = elf.section_names[i];
    if (!(sec.sh_flags & SHF_WRITE) || !(sec.sh_flags & SHF_ALLOC) || sec.sh_size == 0 || is_launch_local(name)) continue;
    if (!is_global_memory(name)) {
      found.push_back({name, "a writable section the harness does not know how to reset"});
      continue;
    }
    bool anchored = false;
    for (auto& s : elf.symbols) anchored = anchored || (s.sym.st_shndx == i && !s.name.empty());
    if (!anchored) found.push_back({name, "writable memory with no symbol to locate it by, so it cannot be reset"});
  }
  return found;
}

std::vector<WritableSection> writable_sections(const std::vector<char>& cubin) {
  std::vector<WritableSection> out;
  Elf elf = read_elf(cubin);
  if (!elf.problem.empty()) return out;
  for (size_t i = 0; i < elf.sections.size(); ++i) {
    const Elf64_Shdr& sec = elf.sections[i];
    if (!(sec.sh_flags & SHF_WRITE) || !is_global_memory(elf.section_names[i]) || sec.sh_size == 0) continue;
    if (sec.sh_size > (1ull << 30)) continue;  // module_state() has no say here; the load refuses it
    WritableSection w;
    w.name = elf.section_names[i];
    w.image.assign(size_t(sec.sh_size), 0);
    if (sec.sh_type != SHT_NOBITS) {
      if (sec.sh_offset > cubin.size() || cubin.size() - sec.sh_offset < sec.sh_size) continue;
      std::memcpy(w.image.data(), cubin.data() + sec.sh_offset, size_t(sec.sh_size));
    }
    for (auto& s : elf.symbols) {
      if (s.sym.st_shndx != i || ELF64_ST_TYPE(s.sym.st_info) == STT_SECTION) continue;
      w.symbols.push_back({s.name, s.sym.st_value, s.sym.st_size});
      // Prefer a plain name: the driver may not look up NVRTC's "$str" names.
      const bool plain = !s.name.empty() && s.name[0] != '$';
      if (w.anchor.empty() || (plain && w.anchor[0] == '$')) w.anchor = s.name, w.anchor_offset = s.sym.st_value;
    }
    std::sort(w.symbols.begin(), w.symbols.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
    if (!w.anchor.empty()) out.push_back(std::move(w));
  }
  return out;
}

std::string WritableSection::describe(uint64_t offset) const {
  const SectionSymbol* before = nullptr;
  for (const SectionSymbol& s : symbols) {
    if (offset >= s.offset && offset < s.offset + std::max<uint64_t>(s.size, 1))
      return (s.name.empty() ? "an unnamed variable" : s.name) + (offset > s.offset ? " + " + std::to_string(offset - s.offset) : "");
    if (s.offset <= offset) before = &s;
  }
  return before ? "padding after " + (before->name.empty() ? std::string("an unnamed variable") : before->name)
                : "padding at the start of " + name;
}

std::string describe_module_state(const std::vector<ModuleState>& found) {
  std::string list;
  for (auto& f : found) list += (list.empty() ? "" : ", ") + f.symbol + " (" + f.what + ")";
  return "the module keeps or calls what a kernel file may not: " + list +
         ". A kernel file may not call device printf, assert, malloc or any function outside itself, "
         "and may hold no __managed__ variables: output the harness does not judge and memory the "
         "host shares are outside the contract. Keep per-launch data in registers or shared memory, "
         "and constants in __constant__, constexpr or #define";
}

}  // namespace ak
