// A library's own definition of an entry point that libtcgd.so also defines
// (interpose/cublas_hooks.cpp, interpose/cudnn_hooks.cpp).
//
// dlsym(RTLD_NEXT) searches the global scope after libtcgd.so, which holds
// the library when the program itself links it. Python loads torch's
// extension with dlopen(RTLD_LOCAL): libtorch_cuda.so and the libraries it
// needs (cuBLAS, cuDNN) are then in that object's own scope, which the
// caller's lookup reaches after the global one (so it finds our wrapper
// first) but RTLD_NEXT never does. So, failing RTLD_NEXT, every loaded
// object whose file name starts with the library's prefix ("libcublas",
// "libcudnn") is asked with a handle of its own (dlopen RTLD_NOLOAD: nothing
// new is loaded), as real_functions.cpp finds a runtime opened that way.
#pragma once

#include <atomic>

namespace tcgd::interpose {

// The definition of `name` in a loaded object named `prefix`* (or next in
// the global scope), never `ours`; nullptr when none is loaded.
void* findLibraryDefinition(const char* prefix, const char* name, const void* ours);

// The same, looked up once per slot: a later call that finds the library
// loaded by then resolves it.
template <class Fn>
Fn libraryDefinition(std::atomic<Fn>& slot, const char* prefix, const char* name, Fn ours) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  fn = reinterpret_cast<Fn>(findLibraryDefinition(prefix, name, reinterpret_cast<const void*>(ours)));
  // release: another thread that loads it sees a resolved function.
  if (fn != nullptr) slot.store(fn, std::memory_order_release);
  return fn;
}

}  // namespace tcgd::interpose
