// `memory stacks`: the native stacks of driver allocations
// (TCGD_MEMORY_STACKS=native or all; docs/memory-stacks.md), each distinct
// stack once with the allocations that used it, frames as module + offset
// and, where the module file is readable here and has a symbol table, a
// function name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bundle/bundle.h"

namespace tcgd::analyze {

struct NativeStackFrame {
  uint64_t offset = 0;  // in the module's file; the address when module is "?"
  std::string module;
  std::string symbol;   // empty: not looked up, or no function holds it
};

struct StackUse {
  uint64_t hash = 0;
  uint64_t blob = 0;
  uint64_t events = 0;
  uint64_t failed = 0;    // calls that returned an error (OOM among them)
  uint64_t bytes = 0;     // sizes of successful allocations
  uint64_t va_bytes = 0;  // sizes of successful cuMemAddressReserve calls
  std::map<std::string, uint64_t> apis;
  bool truncated = false;
  std::vector<NativeStackFrame> frames;  // empty: the blob was not stored
};

struct NativeStacks {
  std::string bundle;
  uint64_t stack_records = 0;
  uint64_t linked = 0;
  uint64_t unlinked_stack_records = 0;    // no allocation record followed
  uint64_t allocations_without_stack = 0;  // an allocation with no stack record
  uint64_t no_stack_events = 0;            // linked, but neither blob nor hash
  std::map<std::string, uint64_t> statuses;  // NativeStackStatus names
  std::vector<StackUse> stacks;  // most bytes first
};

// Reads the bundle's native_stack records and the allocations they precede;
// with `symbols`, names frames from the module files where they are
// readable here. Throws AnalyzeError for a batch that does not decode or a
// stack blob that is not a native-stack v1 blob.
NativeStacks collectNativeStacks(const Bundle& bundle, bool symbols);

}  // namespace tcgd::analyze
