// Internal to the fake driver: the entry-point ids, per-entry counters and
// injected errors, and the objects behind handles.
#pragma once

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1  // declare every ELF variant by its name
#endif
#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

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

// Objects behind handles carry a magic word so the fake can reject foreign
// handles (tests pass only null or readable pointers).
enum class Magic : uint32_t {
  kKernel = 0x4b45524e,
  kStream = 0x5354524d,
  kGraph = 0x47524150,
  kExec = 0x45584543,
  kNode = 0x4e4f4445,
};

struct Kernel {
  Magic magic = Magic::kKernel;
  int family = 1;  // 1 CUkernel, 2 CUfunction
  char name[128] = {};
};

bool isKernel(const void* handle);

// What a capture turns an enqueued call into (fake_graph.cpp).
struct NodeSpec {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUfunction function = nullptr;  // kernel nodes: the launched handle
  unsigned grid[3] = {};
  unsigned block[3] = {};
  unsigned shared_mem = 0;
  CUdeviceptr dptr = 0;  // mem alloc/free nodes; memset/memcpy destination
  size_t bytes = 0;      // mem alloc, memset, memcpy
};

// When `stream` (as an entry point with or without per-thread default-stream
// semantics sees it) is capturing, appends `node` to the capture's graph and
// returns true; the caller then does not execute the work.
bool captureNode(CUstream stream, bool per_thread_entry, const NodeSpec& node);

}  // namespace fake

// Entry-point prologue/epilogue: count, honour an injected error, remember
// the result.
#define FAKE_ENTER(elf)                                                   \
  do {                                                                    \
    const CUresult fake_injected_ = ::fake::enter(::fake::Id::elf);       \
    if (fake_injected_ != CUDA_SUCCESS) return ::fake::finish(::fake::Id::elf, fake_injected_); \
  } while (0)
#define FAKE_RETURN(elf, result) return ::fake::finish(::fake::Id::elf, (result))
