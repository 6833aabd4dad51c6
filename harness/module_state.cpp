#include "harness/module_state.hpp"

#include <elf.h>

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

constexpr const char* kZeroedMemory = ".nv.global";
constexpr const char* kInitializedMemory = ".nv.global.init";

/// The cubin's sections and symbols, each symbol with the name of its section.
struct Elf {
  std::vector<Elf64_Shdr> sections;
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

std::vector<ModuleState> module_state(const std::vector<char>& cubin) {
  Elf elf = read_elf(cubin);
  if (!elf.problem.empty()) return {{"(module)", elf.problem}};
  std::vector<ModuleState> found;
  for (auto& s : elf.symbols) {
    const int type = ELF64_ST_TYPE(s.sym.st_info);
    if (type == STT_FUNC && s.sym.st_shndx == SHN_UNDEF && is_heap_function(s.name))
      found.push_back({s.name, "device heap (" + s.name + ")"});
    else if (type == STT_OBJECT && s.section == kZeroedMemory)
      found.push_back({s.name, "writable device memory, " + std::to_string(s.sym.st_size) + " bytes"});
    else if (type == STT_OBJECT && s.section == kInitializedMemory && (s.name.empty() || s.name[0] == '$'))
      found.push_back({s.name, "a string literal in device code (printf, assert): writable, and it cannot be reset"});
  }
  return found;
}

std::vector<InitializedVariable> initialized_memory(const std::vector<char>& cubin) {
  std::vector<InitializedVariable> vars;
  Elf elf = read_elf(cubin);
  if (!elf.problem.empty()) return vars;
  for (auto& s : elf.symbols) {
    if (ELF64_ST_TYPE(s.sym.st_info) != STT_OBJECT || s.section != kInitializedMemory || s.name.empty() || s.name[0] == '$')
      continue;
    const Elf64_Shdr& sec = elf.sections[s.sym.st_shndx];
    const uint64_t begin = sec.sh_offset + s.sym.st_value, end = begin + s.sym.st_size;
    if (s.sym.st_value + s.sym.st_size > sec.sh_size || end > cubin.size()) continue;
    vars.push_back({s.name, std::vector<char>(cubin.begin() + long(begin), cubin.begin() + long(end))});
  }
  return vars;
}

std::string describe_module_state(const std::vector<ModuleState>& found) {
  std::string list;
  for (auto& f : found) list += (list.empty() ? "" : ", ") + f.symbol + " (" + f.what + ")";
  return "the module keeps state of its own: " + list +
         ". A kernel file may hold no __device__ or __managed__ variables without an initialiser, no "
         "static variables in device code and no device malloc: memory that outlives a launch lets a "
         "kernel remember answers between launches. Keep per-launch data in registers or shared "
         "memory, and constants in __constant__, constexpr or #define";
}

}  // namespace ak
