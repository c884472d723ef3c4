// Internal to the fake driver: the entry-point ids, per-entry counters and
// injected errors, the objects behind handles, and what the parts of the
// fake (memory, copies, launches, streams and captures, graphs, modules)
// share.
#pragma once

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1  // declare every ELF variant by its name
#endif
#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace fake {

enum class Id : size_t {
#define FAKE_ENTRY(elf, base, version, per_thread) elf,
#include "fake_entries.def"
#undef FAKE_ENTRY
  kCount
};
inline constexpr size_t kEntryCount = static_cast<size_t>(Id::kCount);

struct Entry {
  const char* elf;
  const char* base;
  int version;
  bool per_thread;
};
extern const Entry kEntries[kEntryCount];
// The fake's own address of each entry (resolved inside the library: it is
// linked -Bsymbolic, so these never point at an interposer).
extern void* const kAddresses[kEntryCount];

int findEntry(const char* elf);

// The objects behind handles live as long as the process: a destroyed one
// is poisoned, never freed, so that a second destroy or a stale handle gets
// an error and not a use of freed memory. They are kept reachable here so
// that leak checkers (LeakSanitizer in the sanitizer builds) see them as
// the process's, not as leaks.
template <class T, class... Args>
T* retained(Args&&... args) {
  static std::mutex* const mutex = new std::mutex;
  static std::vector<const void*>* const all = new std::vector<const void*>;
  T* object = new T{std::forward<Args>(args)...};
  const std::lock_guard lock(*mutex);
  all->push_back(object);
  return object;
}

// Counts the call; returns an injected error for it, or CUDA_SUCCESS.
CUresult enter(Id id);
// Records `result` as the entry's last result and returns it.
CUresult finish(Id id, CUresult result);

bool initialized();
int driverVersion();

// Devices: FAKE_CUDA_DEVICES (1 to kMaxDevices, default 1). Device 0's
// primary context is active and current on every thread from cuInit on (as
// the fake always had it); another device's becomes active when retained
// and current when pushed (cuCtxPushCurrent_v2, per thread).
inline constexpr int kMaxDevices = 4;
int deviceCount();
int currentDevice();
// The current context's handle (the current device's primary context), and
// whether a handle is one of the fake's contexts.
CUcontext currentContext();
bool validContext(CUcontext context);

// What the fake device reports and enforces (cuDeviceGetAttribute, launch
// checks): a small Hopper part.
inline constexpr int kMultiprocessors = 4;
// cuCtxGetStreamPriorityRange's greatest (the least is 0); greatestPriority()
// is 0 instead under FAKE_CUDA_PRIORITY_LEVELS=1 (a device with one level).
inline constexpr int kGreatestPriority = -5;
int greatestPriority();
inline constexpr int kMaxThreadsPerBlock = 1024;
inline constexpr int kMaxThreadsPerMultiprocessor = 2048;
inline constexpr int kMaxBlocksPerMultiprocessor = 32;
inline constexpr int kMaxSharedMemoryPerBlock = 48 << 10;  // without the opt-in attribute

// Objects behind handles carry a magic word so the fake can reject foreign
// handles (tests pass only null or readable pointers).
enum class Magic : uint32_t {
  kKernel = 0x4b45524e,
  kStream = 0x5354524d,
  kGraph = 0x47524150,
  kExec = 0x45584543,
  kNode = 0x4e4f4445,
  kEvent = 0x45564e54,
  kModule = 0x4d4f444c,
  kLibrary = 0x4c494252,
};

// A fake kernel's CPU body: `params[i]` points at parameter i's bytes (the
// copy the launch or the capture made), grid and block are three numbers.
using KernelBody = void (*)(void* const* params, const uint32_t* grid, const uint32_t* block,
                            void* user);

struct Kernel {
  Magic magic = Magic::kKernel;
  int family = 1;  // 1 CUkernel, 2 CUfunction
  char name[1024] = {};  // real names run to hundreds of characters (templates)
  // The parameter layout cu{Kernel,Func}GetParamInfo report and launches
  // copy by; none for kernels made by fake_cuda_make_kernel.
  std::vector<uint32_t> offsets;
  std::vector<uint32_t> sizes;
  size_t param_bytes = 0;  // end of the last parameter
  KernelBody body = nullptr;
  void* user = nullptr;
};

bool isKernel(const void* handle);
// A kernel made with a parameter layout (fake_driver.cpp's helpers, and the
// fingerprint image's kernels in fake_module.cpp).
Kernel* makeKernel(const char* name, int family, size_t count, const uint32_t* offsets,
                   const uint32_t* sizes);

// What a capture turns an enqueued call into (fake_graph.cpp runs it on
// replay; eager calls run the same work at once).
struct NodeSpec {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUfunction function = nullptr;  // kernel nodes: the launched handle
  unsigned grid[3] = {};
  unsigned block[3] = {};
  unsigned shared_mem = 0;
  bool cooperative = false;
  int priority = 0;               // kernel nodes: CU_LAUNCH_ATTRIBUTE_PRIORITY (streams have the least, 0)
  std::vector<uint8_t> params;  // kernel nodes: the parameter bytes, copied when captured
  CUdeviceptr dptr = 0;         // mem alloc/free nodes; memset/memcpy destination
  size_t bytes = 0;             // mem alloc, memset and memcpy bytes
  CUdeviceptr src = 0;          // memcpy source
  bool dst_device = false;      // memcpy: which sides are device memory (checked on
  bool src_device = false;      // replay: it may have been freed since the capture)
  uint32_t value = 0;           // memset value
  uint32_t element_size = 0;    // memset element: 1, 2 or 4 bytes
  CUhostFn host_fn = nullptr;   // host nodes
  void* host_data = nullptr;
  const void* child = nullptr;  // graph nodes: the graph exec launched into the capture
};

// ---- streams and captures (fake_stream.cpp) -------------------------------

enum class Captured { kNo, kYes, kInvalidated };
// When `stream` (as an entry point with or without per-thread default-stream
// semantics sees it) is capturing, appends `node` to the capture's graph,
// after the stream's current dependencies, and returns kYes: the caller then
// does not execute the work. kInvalidated: the stream's capture was
// invalidated; the caller returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
Captured captureNode(CUstream stream, bool per_thread_entry, const NodeSpec& node);
bool validStream(CUstream stream);
// A "potentially unsafe" call (cuThreadExchangeStreamCaptureMode): while a
// capture prohibits it on this thread, invalidates the captures that do and
// returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; otherwise CUDA_SUCCESS.
CUresult checkUnsafeCall();
// A synchronous copy or set uses the legacy stream, or with a _ptds entry
// point the thread's per-thread stream: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
// while a blocking stream captures, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
// while the per-thread stream does (both invalidate those captures).
CUresult checkDefaultStreamUse(bool per_thread_entry);

// ---- launches (fake_launch.cpp) ---------------------------------------------

// Copies a launch's parameters as the driver does (kernelParams: one pointer
// per parameter of the layout; extra: CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE).
CUresult packParams(const Kernel& kernel, void** kernelParams, void** extra, bool cooperative,
                    std::vector<uint8_t>* out);
// The launch configuration checks every launch and kernel node gets
// (dimensions, threads per block, dynamic shared memory).
CUresult checkLaunchConfig(const NodeSpec& node);
// Runs a kernel node's body (if its kernel has one) on the calling thread.
void runKernel(const NodeSpec& node);

// ---- memory (fake_memory.cpp) and copies (fake_copy.cpp) --------------------

// Whether the device can address [ptr, ptr + bytes): device and managed
// allocations, mapped virtual memory, pinned host allocations and host
// ranges registered with CU_MEMHOSTREGISTER_DEVICEMAP. Pageable host memory
// is not (the fake device reports no pageable memory access).
bool deviceAccessible(CUdeviceptr ptr, size_t bytes);
// Runs a memcpy or memset node on host memory. CUDA_ERROR_ILLEGAL_ADDRESS
// when its device memory is gone (freed after the capture).
CUresult runCopyOrSet(const NodeSpec& node);

// ---- graphs (fake_graph.cpp) --------------------------------------------------

// Runs one node's work now (eager work and replays).
CUresult execute(const NodeSpec& node);

}  // namespace fake

// Entry-point prologue/epilogue: count, honour an injected error, remember
// the result.
#define FAKE_ENTER(elf)                                                   \
  do {                                                                    \
    const CUresult fake_injected_ = ::fake::enter(::fake::Id::elf);       \
    if (fake_injected_ != CUDA_SUCCESS) return ::fake::finish(::fake::Id::elf, fake_injected_); \
  } while (0)
#define FAKE_RETURN(elf, result) return ::fake::finish(::fake::Id::elf, (result))
