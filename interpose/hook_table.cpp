#include "interpose/hook_table.h"

#include <algorithm>

namespace tcgd::interpose {

const HookInfo kHooks[kHookCount] = {
#define TCGD_HOOK(elf_name, type, cls, lib, kind, ...) \
  {#elf_name, type, Library::k##lib, HookKind::k##kind, channel::RecordClass::cls},
#define TCGD_RESOLVER(elf_name) \
  {#elf_name, 0, Library::kDriver, HookKind::kResolver, channel::RecordClass::kDriverOther},
#include "interpose/hooks.def"
#undef TCGD_HOOK
};

int findHook(std::string_view elf_name) {
  // About sixty entries, searched only from dlsym and cuGetProcAddress (a
  // few thousand lookups per process): a linear scan is fast enough and
  // needs no initialization order.
  for (size_t i = 0; i < kHookCount; ++i) {
    if (elf_name == kHooks[i].name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Strips one trailing "_v<digits>", if present.
std::string_view stripVersion(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  if (i == s.size() || i < 2 || s[i - 1] != 'v' || s[i - 2] != '_') return s;
  return s.substr(0, i - 2);
}

}  // namespace

bool isPerThreadVariant(std::string_view elf_name) {
  return endsWith(elf_name, "_ptsz") || endsWith(elf_name, "_ptds");
}

std::string_view baseName(std::string_view elf_name) {
  std::string_view s = elf_name;
  if (isPerThreadVariant(s)) s.remove_suffix(5);
  return stripVersion(s);
}

bool isHookedBase(std::string_view base) { return newestHookedVariant(base) > 0; }

int variantVersion(std::string_view elf_name) {
  std::string_view s = elf_name;
  if (isPerThreadVariant(s)) s.remove_suffix(5);
  const std::string_view stripped = stripVersion(s);
  if (stripped.size() == s.size()) return 1;
  int version = 0;
  for (char c : s.substr(stripped.size() + 2)) version = version * 10 + (c - '0');
  return version;
}

int newestHookedVariant(std::string_view base) {
  int newest = 0;
  for (size_t i = 0; i < kHookCount; ++i) {
    if (kHooks[i].kind == HookKind::kResolver || baseName(kHooks[i].name) != base) continue;
    newest = std::max(newest, variantVersion(kHooks[i].name));
  }
  return newest;
}

}  // namespace tcgd::interpose
