#include "interpose/substitution.h"

#include <dlfcn.h>

#include <atomic>
#include <cerrno>

#include "interpose/cuda_api.h"
#include "interpose/real_functions.h"
#include "log.h"

namespace tcgd::interpose {

Identification identifyPointer(void* fn, Library library) {
  Identification id;
  Dl_info info{};
  if (fn == nullptr || dladdr(fn, &info) == 0 || info.dli_saddr != fn ||
      info.dli_sname == nullptr) {
    return id;  // kUnnamed
  }
  id.name = info.dli_sname;
  const bool in_library = library == Library::kDriver ? isDriverPath(info.dli_fname)
                                                      : isRuntimePath(info.dli_fname);
  if (!in_library) {
    id.identity = Identity::kForeign;
    return id;
  }
  id.hook = findHook(info.dli_sname);
  if (id.hook < 0 || kHooks[id.hook].library != library) {
    id.identity = Identity::kUnhooked;
    id.hook = -1;
    return id;
  }
  // The name alone could belong to a second copy of the library (two
  // runtimes in one process): substitute only the address our wrapper calls.
  id.identity = realFunction(static_cast<HookId>(id.hook)) == fn ? Identity::kHooked
                                                                 : Identity::kMismatch;
  return id;
}

void checkDriverVersionOnce() {
  static constinit std::atomic<bool> checked{false};
  if (checked.load(std::memory_order_relaxed) || checked.exchange(true)) return;
  const int version = driverVersion();
  if (version > CUDA_VERSION) {
    // ELF names fix the ABI of each variant, so hooked variants stay correct
    // on a newer driver; variants introduced after our headers are unknown
    // to the table and pass through (substituteDriverPointer says which).
    TCGD_LOG_WARN_ONCE(
        "CUDA driver {} is newer than the CUDA {} headers tcgd was built with: entry points "
        "added since pass through unrecorded",
        version, CUDA_VERSION);
  }
}

void* substituteDriverPointer(void* fn) {
  const int saved_errno = errno;  // dladdr may set errno; the caller's stays
  checkDriverVersionOnce();
  const Identification id = identifyPointer(fn, Library::kDriver);
  void* result = fn;
  switch (id.identity) {
    case Identity::kHooked:
      result = wrapperFor(static_cast<HookId>(id.hook));
      break;
    case Identity::kUnhooked:
      // Older variants of hooked calls (cuMemAlloc, the 2.0 ABI) are known
      // and deliberately unhooked; a newer one means calls we miss.
      if (variantVersion(id.name) > newestHookedVariant(baseName(id.name)) &&
          isHookedBase(baseName(id.name))) {
        TCGD_LOG_WARN_ONCE(
            "the driver handed out {}, a variant newer than tcgd knows: calls through it are not "
            "recorded",
            id.name);
      }
      break;
    case Identity::kForeign:
    case Identity::kUnnamed:
      TCGD_LOG_WARN_ONCE(
          "cannot identify a driver entry point at {} ({}): passing it through unrecorded", fn,
          id.name != nullptr ? id.name : "no symbol");
      break;
    case Identity::kMismatch:
      TCGD_LOG_WARN_ONCE("{} at {} is not the driver tcgd resolved: passing it through unrecorded",
                         id.name, fn);
      break;
  }
  errno = saved_errno;
  return result;
}

}  // namespace tcgd::interpose
