// The fake runtime: resolves the driver like libcudart.so.13 (see
// fake_runtime.h) and maps a few runtime calls onto driver calls.
#include "fake_runtime.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

#define FAKE_RT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kRuntimeVersion = 13000;  // CUDART_VERSION of the runtime we pose as
constexpr int kErrorInitialization = 3;

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

// What the runtime asks for: base name, the version whose ABI it was written
// against, and whether it wants the per-thread variant.
struct Wanted {
  const char* base;
  int version;
  bool per_thread;
};
constexpr Wanted kWanted[] = {
    {"cuInit", 2000, false},
    {"cuMemAlloc", 3020, false},
    {"cuMemFree", 3020, false},
    {"cuMemAllocAsync", 11020, false},
    {"cuMemFreeAsync", 11020, false},
    {"cuMemAllocHost", 3020, false},
    {"cuMemFreeHost", 2000, false},
    {"cuStreamBeginCapture", 10010, false},
    {"cuStreamEndCapture", 10000, false},
    {"cuGraphInstantiateWithFlags", 11040, false},
    {"cuGraphLaunch", 10000, false},
    {"cuGraphLaunch", 10000, true},
    {"cuGraphExecDestroy", 10000, false},
    {"cuLaunchKernel", 4000, false},
};
enum Slot {
  kInit, kMemAlloc, kMemFree, kMemAllocAsync, kMemFreeAsync, kMemAllocHost, kMemFreeHost,
  kBeginCapture, kEndCapture, kInstantiate, kGraphLaunch, kGraphLaunchPerThread, kExecDestroy,
  kLaunchKernel, kSlotCount
};
static_assert(sizeof(kWanted) / sizeof(kWanted[0]) == kSlotCount);

struct Driver {
  GetProcAddress get_proc_address = nullptr;
  void* fn[kSlotCount] = {};
  int init_result = kErrorInitialization;
};

Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return;
    d.get_proc_address = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
    if (d.get_proc_address == nullptr) return;
    // libcudart's first two queries: an empty name at version 0, then
    // cuGetProcAddress itself, which it uses from then on.
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status;
    (void)d.get_proc_address("", &fn, 0, 0, &status);
    if (d.get_proc_address("cuGetProcAddress", &fn, 12000, 0, &status) == CUDA_SUCCESS &&
        fn != nullptr) {
      d.get_proc_address = reinterpret_cast<GetProcAddress>(fn);
    }
    for (int i = 0; i < kSlotCount; ++i) {
      const cuuint64_t flags = kWanted[i].per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                     : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
      (void)d.get_proc_address(kWanted[i].base, &d.fn[i], kWanted[i].version, flags, &status);
    }
    auto init = reinterpret_cast<CUresult (*)(unsigned)>(d.fn[kInit]);
    d.init_result = init != nullptr ? static_cast<int>(init(0)) : kErrorInitialization;
  });
  return d;
}

template <class Fn>
Fn get(Slot slot) {
  return reinterpret_cast<Fn>(driver().fn[slot]);
}

// Like the real runtime, every call keeps the thread's last error after the
// driver returns, so the driver call is never a tail call and the runtime
// stays on the stack (the caller attribution tests depend on it).
thread_local int t_last_error = 0;

#define FAKE_RT_CALL(slot, Fn, ...)                                           \
  do {                                                                        \
    if (driver().init_result != 0) return driver().init_result;               \
    const auto fn = get<Fn>(slot);                                            \
    const int rc = fn != nullptr ? static_cast<int>(fn(__VA_ARGS__)) : kErrorInitialization; \
    if (rc != 0) t_last_error = rc;                                           \
    return rc;                                                                \
  } while (0)

}  // namespace

// As the real runtime: returns the thread's last error and resets it.
FAKE_RT_EXPORT int cudaGetLastError() {
  const int rc = t_last_error;
  t_last_error = 0;
  return rc;
}

FAKE_RT_EXPORT int cudaMalloc(void** ptr, size_t size) {
  FAKE_RT_CALL(kMemAlloc, CUresult (*)(CUdeviceptr*, size_t), reinterpret_cast<CUdeviceptr*>(ptr),
               size);
}
FAKE_RT_EXPORT int cudaFree(void* ptr) {
  FAKE_RT_CALL(kMemFree, CUresult (*)(CUdeviceptr), reinterpret_cast<CUdeviceptr>(ptr));
}
FAKE_RT_EXPORT int cudaMallocAsync(void** ptr, size_t size, CUstream stream) {
  FAKE_RT_CALL(kMemAllocAsync, CUresult (*)(CUdeviceptr*, size_t, CUstream),
               reinterpret_cast<CUdeviceptr*>(ptr), size, stream);
}
FAKE_RT_EXPORT int cudaFreeAsync(void* ptr, CUstream stream) {
  FAKE_RT_CALL(kMemFreeAsync, CUresult (*)(CUdeviceptr, CUstream),
               reinterpret_cast<CUdeviceptr>(ptr), stream);
}
FAKE_RT_EXPORT int cudaMallocHost(void** ptr, size_t size) {
  FAKE_RT_CALL(kMemAllocHost, CUresult (*)(void**, size_t), ptr, size);
}
FAKE_RT_EXPORT int cudaFreeHost(void* ptr) {
  FAKE_RT_CALL(kMemFreeHost, CUresult (*)(void*), ptr);
}
FAKE_RT_EXPORT int cudaStreamBeginCapture(CUstream stream, int mode) {
  FAKE_RT_CALL(kBeginCapture, CUresult (*)(CUstream, CUstreamCaptureMode), stream,
               static_cast<CUstreamCaptureMode>(mode));
}
FAKE_RT_EXPORT int cudaStreamEndCapture(CUstream stream, CUgraph* graph) {
  FAKE_RT_CALL(kEndCapture, CUresult (*)(CUstream, CUgraph*), stream, graph);
}
FAKE_RT_EXPORT int cudaGraphInstantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  FAKE_RT_CALL(kInstantiate, CUresult (*)(CUgraphExec*, CUgraph, unsigned long long), exec, graph,
               flags);
}
FAKE_RT_EXPORT int cudaGraphLaunch(CUgraphExec exec, CUstream stream) {
  FAKE_RT_CALL(kGraphLaunch, CUresult (*)(CUgraphExec, CUstream), exec, stream);
}
FAKE_RT_EXPORT int cudaGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) {
  FAKE_RT_CALL(kGraphLaunchPerThread, CUresult (*)(CUgraphExec, CUstream), exec, stream);
}
FAKE_RT_EXPORT int cudaGraphExecDestroy(CUgraphExec exec) {
  FAKE_RT_CALL(kExecDestroy, CUresult (*)(CUgraphExec), exec);
}
FAKE_RT_EXPORT int cudaLaunchKernel(const void* func, FakeDim3 grid, FakeDim3 block, void** args,
                                    size_t shared_mem, CUstream stream) {
  using Fn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream, void**, void**);
  FAKE_RT_CALL(kLaunchKernel, Fn, reinterpret_cast<CUfunction>(const_cast<void*>(func)), grid.x,
               grid.y, grid.z, block.x, block.y, block.z, static_cast<unsigned>(shared_mem),
               stream, args, nullptr);
}

FAKE_RT_EXPORT int cudaGetDriverEntryPointByVersion(const char* symbol, void** func,
                                                    unsigned int cuda_version,
                                                    unsigned long long flags, int* status) {
  if (driver().get_proc_address == nullptr) return kErrorInitialization;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  const CUresult result = driver().get_proc_address(symbol, func, static_cast<int>(cuda_version),
                                                    flags, &st);
  if (status != nullptr) *status = static_cast<int>(st);
  return static_cast<int>(result);
}

FAKE_RT_EXPORT int cudaGetDriverEntryPoint(const char* symbol, void** func,
                                           unsigned long long flags, int* status) {
  return cudaGetDriverEntryPointByVersion(symbol, func, kRuntimeVersion, flags, status);
}

FAKE_RT_EXPORT void* fake_cudart_driver_pointer(const char* base_name) {
  for (int i = 0; i < kSlotCount; ++i) {
    if (std::strcmp(kWanted[i].base, base_name) == 0) return driver().fn[i];
  }
  return nullptr;
}
