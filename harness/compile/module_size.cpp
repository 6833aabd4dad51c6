#include "harness/compile/module_size.hpp"

#include <elf.h>

#include <cstring>

namespace ak {

std::optional<uint64_t> initialised_data_bytes(const std::vector<char>& cubin) {
  Elf64_Ehdr eh;
  if (cubin.size() < sizeof eh) return std::nullopt;
  std::memcpy(&eh, cubin.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return std::nullopt;
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > cubin.size() ||
      uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > cubin.size() - eh.e_shoff)
    return std::nullopt;
  uint64_t total = 0;
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, cubin.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (!(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR) || sh.sh_type == SHT_NOBITS) continue;
    total += sh.sh_size;
  }
  return total;
}

}  // namespace ak
