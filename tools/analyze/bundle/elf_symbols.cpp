#include "bundle/elf_symbols.h"

#include <cxxabi.h>
#include <elf.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace tcgd::analyze {
namespace {

std::string readWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <class T>
bool readAt(const std::string& bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

std::string demangle(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (text == nullptr) return name;
  std::string out(text);
  std::free(text);
  return out;
}

}  // namespace

ElfSymbols ElfSymbols::load(const std::string& path) {
  ElfSymbols table;
  const std::string bytes = readWhole(path);
  Elf64_Ehdr header;
  if (!readAt(bytes, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_shentsize != sizeof(Elf64_Shdr))
    return table;
  // Prefer the full table; a stripped file keeps only the dynamic one.
  for (const uint32_t wanted : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
    for (uint32_t i = 0; i < header.e_shnum; ++i) {
      Elf64_Shdr symbols;
      Elf64_Shdr strings;
      if (!readAt(bytes, header.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &symbols) ||
          symbols.sh_type != wanted ||
          !readAt(bytes, header.e_shoff + uint64_t{symbols.sh_link} * sizeof(Elf64_Shdr),
                  &strings) ||
          strings.sh_offset > bytes.size() || bytes.size() - strings.sh_offset < strings.sh_size)
        continue;
      const uint64_t count = symbols.sh_entsize == sizeof(Elf64_Sym)
                                 ? symbols.sh_size / sizeof(Elf64_Sym)
                                 : 0;
      for (uint64_t k = 0; k < count; ++k) {
        Elf64_Sym symbol;
        if (!readAt(bytes, symbols.sh_offset + k * sizeof(Elf64_Sym), &symbol)) break;
        if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_value == 0 ||
            symbol.st_name >= strings.sh_size)
          continue;
        const char* name = bytes.data() + strings.sh_offset + symbol.st_name;
        const size_t length = strnlen(name, strings.sh_size - symbol.st_name);
        table.functions_.try_emplace(symbol.st_value,
                                     Function{symbol.st_size, std::string(name, length)});
      }
    }
    if (!table.functions_.empty()) break;
  }
  return table;
}

std::string ElfSymbols::nameAt(uint64_t return_address) const {
  if (return_address == 0) return {};
  const uint64_t address = return_address - 1;
  auto it = functions_.upper_bound(address);
  if (it == functions_.begin()) return {};
  --it;
  // A size of 0 (hand-written assembly) is taken as "up to the next symbol".
  if (it->second.size != 0 && address - it->first >= it->second.size) return {};
  std::string name = demangle(it->second.name.c_str());
  name += fmt::format("+0x{:x}", return_address - it->first);
  return name;
}

const ElfSymbols& SymbolCache::forPath(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) it = files_.emplace(path, ElfSymbols::load(path)).first;
  return it->second;
}

}  // namespace tcgd::analyze
