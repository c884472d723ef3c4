// Naming kernels: which driver call names a launch handle.
//
// A launch passes a CUfunction or, for most library kernels (ATen, cuBLAS,
// cuDNN on driver 580), a CUkernel cast to one. cuFuncGetName fails with
// CUDA_ERROR_INVALID_HANDLE on a CUkernel and cuKernelGetName on a
// CUfunction, so the resolver tries cuKernelGetName first, then
// cuFuncGetName (CUDA_FACTS.md).
#pragma once

#include <cstdint>

namespace tcgd::collectors {

// The driver's name getters, reached through interpose's real-function
// table (never through the hooks). A seam: tests pass their own.
struct KernelNameSource {
  int (*kernel_get_name)(const char** name, void* handle) = nullptr;
  int (*func_get_name)(const char** name, void* handle) = nullptr;
};

// The kernel_name record's `family` part.
enum class KernelFamily : uint8_t {
  kUnknown = 0,   // neither getter knew the handle
  kKernel = 1,    // named by cuKernelGetName
  kFunction = 2,  // named by cuFuncGetName
};

struct KernelName {
  const char* name = nullptr;  // owned by the driver; nullptr when unknown
  KernelFamily family = KernelFamily::kUnknown;
};

KernelName resolveKernelName(uint64_t handle, const KernelNameSource& source);

}  // namespace tcgd::collectors
