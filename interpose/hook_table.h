// What interpose/hooks.def says about each hooked entry point, as data:
// names, record types, libraries, kinds. No CUDA types and no agent calls,
// so tests and tools can use it without a driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "channel/record.h"

// A word a hook does not fill (hooks.def).
#define TCGD_NO_WORD ("", 0)

namespace tcgd::interpose {

enum class Library : uint8_t {
  kDriver,   // libcuda.so.1
  kRuntime,  // libcudart.so.*
};

enum class HookKind : uint8_t {
  kAfter,     // forward, then record with the result
  kRelease,   // record (pending), then forward; a failure adds a follow-up
  kResolver,  // cuGetProcAddress*: substitutes pointers, records nothing
};

// One enumerator per hooks.def line, named by its ELF name.
enum class HookId : uint16_t {
#define TCGD_HOOK(elf_name, ...) elf_name,
#define TCGD_RESOLVER(elf_name) elf_name,
#include "interpose/hooks.def"
#undef TCGD_HOOK
  kCount
};

inline constexpr size_t kHookCount = static_cast<size_t>(HookId::kCount);

struct HookInfo {
  const char* name;        // exact ELF name
  uint16_t record_type;    // 0 for resolvers
  Library library;
  HookKind kind;
  channel::RecordClass record_class;
};

// Indexed by HookId.
extern const HookInfo kHooks[kHookCount];

inline const HookInfo& hookInfo(HookId id) { return kHooks[static_cast<size_t>(id)]; }

// The hook whose ELF name is exactly `elf_name`, or -1. Not a hot-path call
// (lookups happen in dlsym and cuGetProcAddress, not in wrappers).
int findHook(std::string_view elf_name);

// The base name a caller passes to cuGetProcAddress: `elf_name` without its
// trailing _ptsz/_ptds and _v<N> suffixes ("cuStreamBeginCapture_v2_ptsz"
// gives "cuStreamBeginCapture").
std::string_view baseName(std::string_view elf_name);

// True when some hooked variant has this base name.
bool isHookedBase(std::string_view base);

// True when `elf_name` names a per-thread-default-stream variant.
bool isPerThreadVariant(std::string_view elf_name);

// The ABI generation in a variant's name: N of "_vN", 1 without one
// ("cuStreamBeginCapture_v2_ptsz" gives 2, "cuMemAlloc" 1).
int variantVersion(std::string_view elf_name);

// The highest variantVersion() among the hooked variants of `base`, or 0
// when none is hooked. A driver variant above it is newer than this build.
int newestHookedVariant(std::string_view base);

}  // namespace tcgd::interpose
