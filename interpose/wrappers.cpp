// The exported wrappers, one per hooks.def line, and the table of their
// addresses that the dlsym and cuGetProcAddress interposers hand out.
//
// A wrapper: if its real function is missing, say so once and return "not
// found"; if this thread is already inside a hook (or the agent is off),
// forward and return; otherwise take the guard, start the agent if this is
// the first CUDA use, and
//   After:   forward, run the post action, fill the record, emit;
//   Release: emit the record first (pending flag), then forward; if the real
//            call failed, emit a release_failed follow-up.
// The real result is returned unchanged and errno is what the real call left.
#include <cerrno>
#include <cstdint>
#include <type_traits>

#include "collectors/driver_info.h"
#include "collectors/graph/graph_inventory.h"  // hooks.def: inventory at capture end
#include "collectors/memory/driver_memory.h"
#include "collectors/memory/native_stacks.h"  // hooks.def: stacks of allocations
#include "collectors/points/points.h"  // automatic points in hooks.def's post actions
#include "collectors/tensor/tensor_collector.h"  // the live-allocation maps
#include "emit.h"
#include "interpose/cuda_api.h"
#include "interpose/guard.h"
#include "interpose/hook_table.h"
#include "interpose/caller.h"
#include "interpose/real_functions.h"
#include "interpose/substitution.h"
#include "interpose/words.h"
#include "log.h"
#include "torch_loader.h"

#define TCGD_WORD_EXPR_(descriptor, expression) expression
#define TCGD_WORD_EXPR(word) TCGD_WORD_EXPR_ word

namespace tcgd::interpose {
namespace {

constexpr uint8_t kFlagPending = 1;

template <class Result>
Result missingReal(HookId id) {
  TCGD_LOG_WARN_ONCE("{} was called but the library that defines it is not loaded or lacks it",
                     hookInfo(id).name);
  if constexpr (std::is_same_v<Result, CUresult>) {
    return CUDA_ERROR_NOT_FOUND;
  } else {
    return kCudaErrorSymbolNotFound;
  }
}

[[gnu::noinline]] bool startRecording() {
  // First CUDA use starts the agent; start() is cheap once it has run (and
  // returns false at once when the agent is disabled).
  const int saved_errno = errno;
  const bool started = agent::start();
  errno = saved_errno;
  return started;
}

inline bool recording() { return agent::activeChannel() != nullptr || startRecording(); }

// Memory hooks name the library that allocated (interpose/caller.h); the
// others keep the plain return address, which costs nothing.
template <channel::RecordClass kClass>
inline uint64_t callerOf(void* return_address) {
  if constexpr (kClass == channel::RecordClass::kDriverMemory ||
                kClass == channel::RecordClass::kHostMemory) {
    return attributeCaller(return_address);
  } else {
    return reinterpret_cast<uintptr_t>(return_address);
  }
}

inline void emitWords(uint16_t type, channel::RecordClass cls, uint8_t flags, uint64_t a0,
                      uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  // A full ring is counted as a drop inside emit(); nothing else to do here.
  (void)agent::emit(type, cls, flags, a0, a1, a2, a3, a4);
}

}  // namespace
}  // namespace tcgd::interpose

using namespace tcgd;
using namespace tcgd::interpose;

#define TCGD_HOOK(name, type, cls, lib, kind, ret, params, args, post, w0, w1, w2, w3, w4)       \
  extern "C" __attribute__((visibility("default"))) ret name params {                           \
    using Fn = ret(*) params;                                                                   \
    const auto real = reinterpret_cast<Fn>(realFunction(HookId::name));                         \
    if (__builtin_expect(real == nullptr, 0)) return missingReal<ret>(HookId::name);            \
    if (HookGuard::active()) return real args;                                                  \
    HookGuard guard;                                                                            \
    if (!recording()) return real args;                                                         \
    constexpr channel::RecordClass kClass = channel::RecordClass::cls;                          \
    [[maybe_unused]] const uint64_t caller = callerOf<kClass>(__builtin_return_address(0));     \
    if constexpr (HookKind::k##kind == HookKind::kRelease) {                                    \
      {                                                                                         \
        [[maybe_unused]] const ret result{};                                                    \
        emitWords(type, kClass, kFlagPending, TCGD_WORD_EXPR(w0), TCGD_WORD_EXPR(w1),           \
                  TCGD_WORD_EXPR(w2), TCGD_WORD_EXPR(w3), TCGD_WORD_EXPR(w4));                  \
        if constexpr (kClass == channel::RecordClass::kDriverMemory)                            \
          collectors::tensor::driverMemoryRecord(type, TCGD_WORD_EXPR(w0), TCGD_WORD_EXPR(w1),  \
                                                 TCGD_WORD_EXPR(w2), caller);                   \
      }                                                                                         \
      const ret result = real args;                                                             \
      if (result != ret{}) {                                                                    \
        collectors::recordReleaseFailed(type, TCGD_WORD_EXPR(w0), static_cast<uint32_t>(result)); \
      }                                                                                         \
      return result;                                                                            \
    } else {                                                                                    \
      const ret result = real args;                                                             \
      const int saved_errno = errno;                                                            \
      (void)(post);                                                                             \
      emitWords(type, kClass, 0, TCGD_WORD_EXPR(w0), TCGD_WORD_EXPR(w1), TCGD_WORD_EXPR(w2),    \
                TCGD_WORD_EXPR(w3), TCGD_WORD_EXPR(w4));                                        \
      if constexpr (kClass == channel::RecordClass::kDriverMemory) {                            \
        collectors::tensor::driverMemoryRecord(type, TCGD_WORD_EXPR(w0), TCGD_WORD_EXPR(w1),    \
                                               TCGD_WORD_EXPR(w2), caller);                     \
        agent::torchMaybeAttach();                                                              \
      }                                                                                         \
      errno = saved_errno;                                                                      \
      return result;                                                                            \
    }                                                                                           \
  }
#include "interpose/hooks.def"
#undef TCGD_HOOK

namespace tcgd::interpose {
namespace {

void* const kWrappers[kHookCount] = {
#define TCGD_HOOK(name, ...) reinterpret_cast<void*>(&::name),
#define TCGD_RESOLVER(name) reinterpret_cast<void*>(&::name),
#include "interpose/hooks.def"
#undef TCGD_HOOK
};

}  // namespace

void* wrapperFor(HookId id) { return kWrappers[static_cast<size_t>(id)]; }

}  // namespace tcgd::interpose
