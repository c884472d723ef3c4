// Function names from an ELF file's symbol table, for naming the frames of
// native stacks on the analysis machine (docs/memory-stacks.md). Reads
// .symtab, or .dynsym when the file is stripped; nothing else (no DWARF).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tcgd::analyze {

class ElfSymbols {
 public:
  // The symbols of the file at `path`, or an empty table when the file is
  // not readable here, not a 64-bit little-endian ELF file, or has no
  // symbol table. Never throws for a bad file.
  static ElfSymbols load(const std::string& path);

  bool empty() const { return functions_.empty(); }
  // The demangled name of the function that made the call returning to
  // `return_address` (an address in the file: a frame's offset), with
  // "+0xN", the return address's distance from the function's start; empty
  // when no function holds the call. The call is the byte before the return
  // address, which may lie in the next function after a noreturn call.
  std::string nameAt(uint64_t return_address) const;

 private:
  struct Function {
    uint64_t size;
    std::string name;
  };
  std::map<uint64_t, Function> functions_;  // by start address
};

// ElfSymbols per path, each file read once.
class SymbolCache {
 public:
  const ElfSymbols& forPath(const std::string& path);

 private:
  std::map<std::string, ElfSymbols> files_;
};

}  // namespace tcgd::analyze
