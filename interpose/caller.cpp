#include "interpose/caller.h"

#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <atomic>
#include <cstring>

#include "interpose/real_functions.h"

namespace tcgd::interpose {
namespace {

#ifdef DLFO_EH_SEGMENT_TYPE
// glibc >= 2.35's lock-free address-to-object lookup, which the unwinder of
// GCC >= 12 uses too. Looked up at run time rather than linked, so
// libtcgd.so needs no glibc symbol newer than 2.34.
using FindObjectFn = int (*)(void* address, dl_find_object* result);

FindObjectFn findObject() {
  // 1 = not looked up yet; nullptr = unavailable.
  static std::atomic<FindObjectFn> cached{reinterpret_cast<FindObjectFn>(1)};
  FindObjectFn fn = cached.load(std::memory_order_acquire);
  if (fn != reinterpret_cast<FindObjectFn>(1)) return fn;
  DlsymFn real = realDlsym();
  fn = real != nullptr ? reinterpret_cast<FindObjectFn>(real(RTLD_DEFAULT, "_dl_find_object"))
                       : nullptr;
  cached.store(fn, std::memory_order_release);
  return fn;
}

// Where libtcgd.so itself is mapped (our wrappers are the first frames).
const void* ownMapStart(FindObjectFn find) {
  static std::atomic<const void*> cached{nullptr};
  const void* start = cached.load(std::memory_order_relaxed);
  if (start == nullptr) {
    dl_find_object object;
    if (find(reinterpret_cast<void*>(&attributeCaller), &object) == 0) {
      start = object.dlfo_map_start;
      cached.store(start, std::memory_order_relaxed);
    }
  }
  return start;
}

// True for frames that are not the answer: libtcgd.so, the driver, a CUDA
// runtime. Frames that cannot be placed are not skipped.
bool isPassThrough(FindObjectFn find, void* address) {
  dl_find_object object;
  if (find(address, &object) != 0) return false;
  if (object.dlfo_map_start == ownMapStart(find)) return true;
  const char* path = object.dlfo_link_map != nullptr ? object.dlfo_link_map->l_name : nullptr;
  return path != nullptr && (isRuntimePath(path) || isDriverPath(path));
}

struct Walk {
  FindObjectFn find;
  uintptr_t answer = 0;
  int frames = 0;
};

_Unwind_Reason_Code visit(_Unwind_Context* context, void* arg) {
  auto* walk = static_cast<Walk*>(arg);
  const uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0 || ++walk->frames > 48) return _URC_END_OF_STACK;
  if (isPassThrough(walk->find, reinterpret_cast<void*>(ip))) return _URC_NO_REASON;
  walk->answer = ip;
  return _URC_END_OF_STACK;
}
#endif

}  // namespace

uint64_t attributeCaller(void* return_address) {
  const auto fallback = reinterpret_cast<uintptr_t>(return_address);
#ifdef DLFO_EH_SEGMENT_TYPE
  FindObjectFn find = findObject();
  if (find == nullptr || !isPassThrough(find, return_address)) return fallback;
  // Allocations are rare next to launches, and the driver call they wrap
  // costs far more than this walk (no lock: the unwinder finds frames through
  // _dl_find_object too).
  Walk walk{find};
  _Unwind_Backtrace(&visit, &walk);
  return walk.answer != 0 ? walk.answer : fallback;
#else
  return fallback;
#endif
}

}  // namespace tcgd::interpose
