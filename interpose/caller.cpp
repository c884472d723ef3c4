#include "interpose/caller.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>
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

struct StackWalk {
  FindObjectFn find;
  const void* own;  // libtcgd.so's map start, or nullptr when unknown
  uint64_t* frames;
  int max;
  int count = 0;
  int skipped = 0;
  bool truncated = false;
};

_Unwind_Reason_Code collect(_Unwind_Context* context, void* arg) {
  auto* walk = static_cast<StackWalk*>(arg);
  const uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  // Leading frames in libtcgd.so (this walk, the collector, the wrapper)
  // are the agent's, not the job's. Bounded in case the unwinder loops.
  if (walk->count == 0 && walk->own != nullptr) {
    if (++walk->skipped > 16) return _URC_END_OF_STACK;
    dl_find_object object;
    if (walk->find(reinterpret_cast<void*>(ip), &object) == 0 &&
        object.dlfo_map_start == walk->own)
      return _URC_NO_REASON;
  }
  if (walk->count == walk->max) {
    walk->truncated = true;
    return _URC_END_OF_STACK;
  }
  walk->frames[walk->count++] = ip;
  return _URC_NO_REASON;
}

// The main program's link map has an empty name. Read once into static
// storage (no allocation); a thread that races the first reader gets the
// fallback rather than wait.
const char* mainProgramPath() {
  static char path[4096];
  static std::atomic<int> state{0};  // 0 unread, 1 reading, 2 ready, 3 failed
  int seen = state.load(std::memory_order_acquire);
  if (seen == 0 && state.compare_exchange_strong(seen, 1, std::memory_order_acq_rel)) {
    const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n > 0) path[n] = '\0';
    // release: the path bytes are written before "ready" is seen.
    state.store(n > 0 ? 2 : 3, std::memory_order_release);
    seen = n > 0 ? 2 : 3;
  }
  return seen == 2 ? path : "[main]";
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

int captureStack(uint64_t* frames, int max, bool* truncated) {
  *truncated = false;
#ifdef DLFO_EH_SEGMENT_TYPE
  FindObjectFn find = findObject();
  if (find == nullptr) return -1;
  // Same reasoning as attributeCaller(): with _dl_find_object the unwinder
  // takes no lock, and the allocation it describes costs far more.
  StackWalk walk{find, ownMapStart(find), frames, max};
  _Unwind_Backtrace(&collect, &walk);
  *truncated = walk.truncated;
  return walk.count;
#else
  (void)frames;
  (void)max;
  return -1;
#endif
}

bool placeAddress(uint64_t address, uint64_t* bias, const char** path) {
#ifdef DLFO_EH_SEGMENT_TYPE
  FindObjectFn find = findObject();
  dl_find_object object;
  if (find == nullptr || find(reinterpret_cast<void*>(address), &object) != 0) return false;
  const link_map* map = object.dlfo_link_map;
  *bias = map != nullptr ? map->l_addr : reinterpret_cast<uintptr_t>(object.dlfo_map_start);
  const char* name = map != nullptr ? map->l_name : nullptr;
  *path = name != nullptr && name[0] != '\0' ? name : mainProgramPath();
  return true;
#else
  (void)address;
  (void)bias;
  (void)path;
  return false;
#endif
}

}  // namespace tcgd::interpose
