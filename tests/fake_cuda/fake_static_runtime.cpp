#include "fake_static_runtime.h"

#include <dlfcn.h>

#define FSRT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
void* driverHandle() {
  static void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return handle;
}
}  // namespace

FSRT_EXPORT void* fsrt_symbol(const char* elf_name) {
  void* handle = driverHandle();
  return handle != nullptr ? dlsym(handle, elf_name) : nullptr;
}

FSRT_EXPORT void* fsrt_default_symbol(const char* name) { return dlsym(RTLD_DEFAULT, name); }

FSRT_EXPORT void* fsrt_next_symbol(const char* name) { return dlsym(RTLD_NEXT, name); }
