// The dlsym interposer.
//
// The runtimes linked statically into cuBLAS, cuBLASLt and NCCL dlsym driver
// symbols (cuMemAlloc_v2, cuGraphLaunch, ...) straight off the libcuda
// handle, and cudart dlsyms cuGetProcAddress_v2 that way. We substitute our
// wrapper when, and only when, the lookup resolves into libcuda (or into a
// CUDA runtime, for cudaGraphLaunch) and the symbol is hooked.
//
// Everything else is forwarded to glibc's dlsym as a tail call. That matters
// for RTLD_NEXT and RTLD_DEFAULT, which glibc resolves relative to the
// object that called dlsym, found from the return address: a jmp leaves the
// original caller's return address in place. This file is compiled with
// -O2 -foptimize-sibling-calls and without sanitizers whatever the build
// (interpose/CMakeLists.txt), and tests/interpose checks the RTLD_NEXT
// behaviour.
#include <dlfcn.h>

#include <atomic>
#include <cerrno>

#include "interpose/hook_table.h"
#include "interpose/real_functions.h"
#include "interpose/substitution.h"

namespace tcgd::interpose {

// Here rather than in real_functions.cpp: sanitizer runtimes preloaded before
// libtcgd.so call dlsym (ours, the first definition they find) while they
// initialize, before instrumented code may run. This file is compiled
// without sanitizers, and so is everything dlsym(RTLD_NEXT, ...) reaches.
namespace {
constinit std::atomic<DlsymFn> g_real_dlsym{nullptr};
}  // namespace

DlsymFn realDlsym() {
  DlsymFn fn = g_real_dlsym.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  const int saved_errno = errno;
  // dlvsym is not interposed, so this cannot reach our own dlsym. glibc 2.34
  // moved dlsym into libc under a new version; older glibc has only 2.2.5.
  void* found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (found == nullptr) found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  errno = saved_errno;
  fn = reinterpret_cast<DlsymFn>(found);
  // Two threads may both look it up; they store the same address.
  if (fn != nullptr) g_real_dlsym.store(fn, std::memory_order_release);
  return fn;
}

namespace {

struct Decision {
  bool decided = false;
  void* value = nullptr;
};

// The lookup "as if libtcgd.so were not loaded": called from here, RTLD_NEXT
// starts after us. Sets dlerror() like any failed lookup when nothing is
// found.
void* lookUpPastUs(DlsymFn real, const char* symbol) { return real(RTLD_NEXT, symbol); }

// Not inlined into dlsym(), so that dlsym() itself stays a leaf plus one
// tail call.
[[gnu::noinline]] Decision decide(void* handle, const char* symbol, DlsymFn real) {
  // Cheap filter first: most dlsym traffic (Python, plugins) is not CUDA.
  if (symbol == nullptr || symbol[0] != 'c' || symbol[1] != 'u') return {};
  const int hook = findHook(symbol);
  if (hook < 0) return {};
  const HookId id = static_cast<HookId>(hook);
  void* const wrapper = wrapperFor(id);

  if (handle == RTLD_DEFAULT) {
    // Global lookup: our export comes first in the global scope, so the
    // caller would get our wrapper. That is right only when the real library
    // is loaded and defines the symbol; otherwise answer what the lookup
    // would have answered without us (usually NULL: no CUDA here).
    if (realFunction(id) != nullptr) {
      (void)real(RTLD_DEFAULT, symbol);  // leaves dlerror() as a success would
      return {true, wrapper};
    }
    return {true, lookUpPastUs(real, symbol)};
  }

  void* const found = real(handle, symbol);
  if (found == nullptr) return {true, nullptr};  // dlerror() says why
  if (found == wrapper) {
    // The handle's scope reached our own export (dlopen(NULL), say): same
    // rule as RTLD_DEFAULT.
    return realFunction(id) != nullptr ? Decision{true, wrapper}
                                       : Decision{true, lookUpPastUs(real, symbol)};
  }
  const Identification which = identifyPointer(found, hookInfo(id).library);
  if (which.identity == Identity::kHooked) {
    return {true, wrapperFor(static_cast<HookId>(which.hook))};
  }
  return {true, found};  // another library's symbol, or one we cannot vouch for
}

}  // namespace
}  // namespace tcgd::interpose

extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* symbol) {
  using namespace tcgd::interpose;
  // glibc declares dlsym's symbol argument nonnull; launder it so the
  // compiler keeps the null checks in decide() for callers that break that
  // contract (glibc itself reports an error for them).
  asm("" : "+r"(symbol));
  const DlsymFn real = realDlsym();
  if (real == nullptr) return nullptr;
  if (handle != RTLD_NEXT) {
    const Decision decision = decide(handle, symbol, real);
    if (decision.decided) return decision.value;
  }
  return real(handle, symbol);  // tail call: glibc sees the original caller
}
