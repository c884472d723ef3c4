// The real CUDA entry points behind the hooks, and glibc's dlsym.
//
// Every slot is resolved lazily, on first use, through glibc's own dlsym on
// the driver's handle (dlopen("libcuda.so.1", RTLD_NOLOAD)) or, for the
// runtime's entry points, on the runtime that comes after libtcgd.so in
// lookup order. Nothing here goes through our dlsym or cuGetProcAddress
// interposers, so resolving never recurses into a hook. Nothing here loads
// a library the process has not loaded.
#pragma once

#include <atomic>
#include <cstddef>

#include "interpose/cuda_api.h"
#include "interpose/hook_table.h"

namespace tcgd::interpose {

using DlsymFn = void* (*)(void* handle, const char* symbol);

// glibc's dlsym, from dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"), falling back
// to "GLIBC_2.2.5" (glibc before 2.34 keeps it in libdl). nullptr only if
// neither exists. Defined in dlsym_hook.cpp (uninstrumented: it says why).
DlsymFn realDlsym();

// The process's libcuda.so.1, or nullptr if it is not loaded.
void* driverHandle();

// True when `path` names the driver library (libcuda.so*) or a CUDA runtime
// (a file name containing "cudart": libcudart.so.13, the tests' fake).
bool isDriverPath(const char* path);
bool isRuntimePath(const char* path);

// Slots indexed by HookId. A slot is written once with the resolved address
// (release) and read with acquire; readers that see null resolve again.
extern std::atomic<void*> g_real_functions[kHookCount];
void* resolveRealFunction(HookId id);

// The real function behind a hook, or nullptr when its library is not loaded
// or lacks the symbol (an older driver).
inline void* realFunction(HookId id) {
  void* fn = g_real_functions[static_cast<size_t>(id)].load(std::memory_order_acquire);
  return fn != nullptr ? fn : resolveRealFunction(id);
}

// Driver calls the agent makes without hooking them. Each returns
// CUDA_ERROR_NOT_FOUND when the driver lacks the entry point.
CUresult realCtxGetDevice(CUdevice* device);
CUresult realStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status);
CUresult realKernelGetName(const char** name, CUkernel kernel);
CUresult realFuncGetName(const char** name, CUfunction function);
// For the point-time memory measurement of every device with an active
// primary context (collectors/memory/point_memory.cpp).
CUresult realDeviceGetCount(int* count);
CUresult realDeviceGet(CUdevice* device, int ordinal);
CUresult realDeviceGetUuid(CUuuid* uuid, CUdevice device);  // cuDeviceGetUuid_v2
CUresult realDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active);
CUresult realDevicePrimaryCtxRetain(CUcontext* context, CUdevice device);
CUresult realDevicePrimaryCtxRelease(CUdevice device);  // cuDevicePrimaryCtxRelease_v2
CUresult realCtxPushCurrent(CUcontext context);          // cuCtxPushCurrent_v2
CUresult realCtxPopCurrent(CUcontext* context);          // cuCtxPopCurrent_v2

// cuDriverGetVersion through the real table, cached; 0 when unknown.
int driverVersion();

}  // namespace tcgd::interpose
