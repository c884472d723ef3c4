// The fake driver's memory entry points, on host memory: device and pinned
// allocations are malloc'd, virtual memory is mmap'd, registered host ranges
// are remembered. Errors follow the real driver where tests rely on them
// (size 0, unknown pointers, no cuInit, allocation during a capture that
// forbids it).
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "fake_cuda.h"
#include "fake_state.h"

namespace {

constexpr uint64_t kTotalBytes = uint64_t{80} << 30;

struct HostBlock {
  size_t bytes = 0;
  unsigned flags = 0;
};

// Ordered by address: copies, sets and cuMemHostGetDevicePointer look up
// the range a pointer falls in.
struct Memory {
  std::mutex mutex;
  std::map<uint64_t, size_t> device;         // pointer -> bytes
  std::map<uint64_t, HostBlock> host;        // pinned host allocations
  std::map<uint64_t, HostBlock> registered;  // cuMemHostRegister ranges
  std::map<uint64_t, size_t> mapped;         // cuMemMap ranges
  std::unordered_map<uint64_t, size_t> handles;  // cuMemCreate handle -> bytes
  std::map<uint64_t, size_t> reservations;       // cuMemAddressReserve base -> bytes
  uint64_t next_handle = 0x1000;
  uint64_t live_device_bytes = 0;
  // cuMemAlloc* bytes made while a device other than 0 was current, by
  // device (cuMemGetInfo_v2 of that device); device 0 has the rest.
  std::unordered_map<uint64_t, int> device_of;
  uint64_t other_device_bytes[fake::kMaxDevices] = {};
};

// The entry of `ranges` whose [start, start + size) holds [ptr, ptr + bytes).
template <class Map, class SizeOf>
typename Map::const_iterator containing(const Map& ranges, uint64_t ptr, size_t bytes,
                                        SizeOf size_of) {
  auto it = ranges.upper_bound(ptr);
  if (it == ranges.begin()) return ranges.end();
  --it;
  const uint64_t end = it->first + size_of(it->second);
  return ptr >= it->first && ptr + bytes <= end && ptr + bytes >= ptr ? it : ranges.end();
}

size_t plainSize(size_t bytes) { return bytes; }
size_t blockSize(const HostBlock& block) { return block.bytes; }

template <class Map, class SizeOf>
bool overlaps(const Map& ranges, uint64_t ptr, size_t bytes, SizeOf size_of) {
  auto it = ranges.lower_bound(ptr);
  if (it != ranges.end() && it->first < ptr + bytes) return true;
  if (it == ranges.begin()) return false;
  --it;
  return it->first + size_of(it->second) > ptr;
}

Memory& memory() {
  static auto* m = new Memory;  // never destroyed: calls may come during exit
  return *m;
}

CUresult allocDevice(CUdeviceptr* dptr, size_t bytes) {
  if (!fake::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  // 256-byte aligned, as cuMemAlloc guarantees (tcgd's allocation maps rely
  // on it).
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  m.device[reinterpret_cast<uint64_t>(p)] = bytes;
  m.live_device_bytes += bytes;
  if (const int current = fake::currentDevice(); current != 0) {
    m.device_of[reinterpret_cast<uint64_t>(p)] = current;
    m.other_device_bytes[current] += bytes;
  }
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult freeDevice(CUdeviceptr dptr) {
  if (!fake::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  auto it = m.device.find(dptr);
  if (it == m.device.end()) return CUDA_ERROR_INVALID_VALUE;
  m.live_device_bytes -= it->second;
  if (auto other = m.device_of.find(dptr); other != m.device_of.end()) {
    m.other_device_bytes[other->second] -= it->second;
    m.device_of.erase(other);
  }
  m.device.erase(it);
  std::free(reinterpret_cast<void*>(dptr));
  return CUDA_SUCCESS;
}

CUresult allocHost(void** pp, size_t bytes, unsigned flags) {
  if (!fake::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pp == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = std::malloc(bytes);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  m.host[reinterpret_cast<uint64_t>(p)] = HostBlock{bytes, flags};
  *pp = p;
  return CUDA_SUCCESS;
}

bool isDevicePointer(CUdeviceptr dptr) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  return m.device.count(dptr) != 0;
}

fake::Captured captureMemNode(CUstream stream, bool per_thread, CUgraphNodeType type,
                              CUdeviceptr dptr, size_t bytes) {
  fake::NodeSpec node;
  node.type = type;
  node.dptr = dptr;
  node.bytes = bytes;
  return fake::captureNode(stream, per_thread, node);
}

// Allocation and release outside stream order are "potentially unsafe" during
// a capture (in global mode a capture anywhere forbids cudaMalloc in every
// thread: CUDA_FACTS.md).
CUresult initializedAndSafe() {
  if (!fake::initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return fake::checkUnsafeCall();
}

}  // namespace

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  FAKE_ENTER(cuMemGetInfo_v2);
  if (!fake::initialized()) FAKE_RETURN(cuMemGetInfo_v2, CUDA_ERROR_NOT_INITIALIZED);
  if (free_bytes == nullptr || total_bytes == nullptr) {
    FAKE_RETURN(cuMemGetInfo_v2, CUDA_ERROR_INVALID_VALUE);
  }
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  *total_bytes = kTotalBytes;
  uint64_t used = m.live_device_bytes;
  for (int d = 1; d < fake::kMaxDevices; ++d) used -= m.other_device_bytes[d];
  const int current = fake::currentDevice();
  if (current != 0) used = m.other_device_bytes[current];
  *free_bytes = kTotalBytes - used;
  FAKE_RETURN(cuMemGetInfo_v2, CUDA_SUCCESS);
}

// The 2.0 ABI with 32-bit pointers: present so tests can ask for it, but (as
// on any 64-bit driver worth testing) it cannot allocate.
FAKE_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  FAKE_ENTER(cuMemAlloc);
  (void)dptr;
  (void)bytesize;
  FAKE_RETURN(cuMemAlloc, CUDA_ERROR_NOT_SUPPORTED);
}

// Safe-call checks first: a prohibited call during a capture fails (and
// invalidates the capture) whatever its arguments.
#define FAKE_SAFE_OR_RETURN(elf)                                                \
  do {                                                                          \
    if (const CUresult unsafe_ = initializedAndSafe(); unsafe_ != CUDA_SUCCESS) \
      FAKE_RETURN(elf, unsafe_);                                                \
  } while (0)

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  FAKE_ENTER(cuMemAlloc_v2);
  FAKE_SAFE_OR_RETURN(cuMemAlloc_v2);
  FAKE_RETURN(cuMemAlloc_v2, allocDevice(dptr, bytesize));
}

FAKE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                        size_t Height, unsigned int ElementSizeBytes) {
  FAKE_ENTER(cuMemAllocPitch_v2);
  FAKE_SAFE_OR_RETURN(cuMemAllocPitch_v2);
  if (pPitch == nullptr || ElementSizeBytes == 0 || Height == 0) {
    FAKE_RETURN(cuMemAllocPitch_v2, CUDA_ERROR_INVALID_VALUE);
  }
  const size_t pitch = (WidthInBytes + 511) / 512 * 512;
  const CUresult result = allocDevice(dptr, pitch * Height);
  if (result == CUDA_SUCCESS) *pPitch = pitch;
  FAKE_RETURN(cuMemAllocPitch_v2, result);
}

FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  FAKE_ENTER(cuMemAllocManaged);
  FAKE_SAFE_OR_RETURN(cuMemAllocManaged);
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    FAKE_RETURN(cuMemAllocManaged, CUDA_ERROR_INVALID_VALUE);
  }
  FAKE_RETURN(cuMemAllocManaged, allocDevice(dptr, bytesize));
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  FAKE_ENTER(cuMemFree_v2);
  FAKE_SAFE_OR_RETURN(cuMemFree_v2);
  FAKE_RETURN(cuMemFree_v2, freeDevice(dptr));
}

FAKE_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  FAKE_ENTER(cuMemAllocHost_v2);
  FAKE_SAFE_OR_RETURN(cuMemAllocHost_v2);
  FAKE_RETURN(cuMemAllocHost_v2, allocHost(pp, bytesize, 0));
}

FAKE_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  FAKE_ENTER(cuMemHostAlloc);
  FAKE_SAFE_OR_RETURN(cuMemHostAlloc);
  constexpr unsigned kKnown =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if ((Flags & ~kKnown) != 0) FAKE_RETURN(cuMemHostAlloc, CUDA_ERROR_INVALID_VALUE);
  FAKE_RETURN(cuMemHostAlloc, allocHost(pp, bytesize, Flags));
}

FAKE_EXPORT CUresult cuMemFreeHost(void* p) {
  FAKE_ENTER(cuMemFreeHost);
  FAKE_SAFE_OR_RETURN(cuMemFreeHost);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (m.host.erase(reinterpret_cast<uint64_t>(p)) == 0) {
    FAKE_RETURN(cuMemFreeHost, CUDA_ERROR_INVALID_VALUE);
  }
  std::free(p);
  FAKE_RETURN(cuMemFreeHost, CUDA_SUCCESS);
}

// ---- host registration ----------------------------------------------------

// The flags of CUDA 13.0. The fake has no I/O memory to map
// (CU_MEMHOSTREGISTER_IOMEMORY is CUDA_ERROR_NOT_SUPPORTED) and reports
// CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, so READ_ONLY is
// accepted (and not enforced: host memory stays writable).
namespace {
CUresult registerHost(void* p, size_t bytesize, unsigned flags) {
  if (const CUresult unsafe = initializedAndSafe(); unsafe != CUDA_SUCCESS) return unsafe;
  constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                              CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (p == nullptr || bytesize == 0 || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  const auto base = reinterpret_cast<uint64_t>(p);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  // Pinned allocations are page-locked already: registering them (or any
  // part of a registered range) again is refused.
  if (overlaps(m.registered, base, bytesize, blockSize) ||
      overlaps(m.host, base, bytesize, blockSize)) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  m.registered[base] = HostBlock{bytesize, flags};
  return CUDA_SUCCESS;
}
}  // namespace

FAKE_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  FAKE_ENTER(cuMemHostRegister_v2);
  FAKE_RETURN(cuMemHostRegister_v2, registerHost(p, bytesize, Flags));
}

// The 4.0 ABI takes the same arguments; the fake treats both alike.
FAKE_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  FAKE_ENTER(cuMemHostRegister);
  FAKE_RETURN(cuMemHostRegister, registerHost(p, bytesize, Flags));
}

// Only by the base address given to cuMemHostRegister (documented).
FAKE_EXPORT CUresult cuMemHostUnregister(void* p) {
  FAKE_ENTER(cuMemHostUnregister);
  FAKE_SAFE_OR_RETURN(cuMemHostUnregister);
  if (p == nullptr) FAKE_RETURN(cuMemHostUnregister, CUDA_ERROR_INVALID_VALUE);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (m.registered.erase(reinterpret_cast<uint64_t>(p)) == 0) {
    FAKE_RETURN(cuMemHostUnregister, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  }
  FAKE_RETURN(cuMemHostUnregister, CUDA_SUCCESS);
}

// The device pointer equals the host pointer (the fake device has
// CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM). Pinned
// allocations are mapped by unified addressing whatever their flags (as
// cuMemHostAlloc documents); registered ranges only with
// CU_MEMHOSTREGISTER_DEVICEMAP. Any address inside such a range works.
FAKE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  FAKE_ENTER(cuMemHostGetDevicePointer_v2);
  if (!fake::initialized()) FAKE_RETURN(cuMemHostGetDevicePointer_v2, CUDA_ERROR_NOT_INITIALIZED);
  if (pdptr == nullptr || p == nullptr || Flags != 0) {
    FAKE_RETURN(cuMemHostGetDevicePointer_v2, CUDA_ERROR_INVALID_VALUE);
  }
  const auto ptr = reinterpret_cast<uint64_t>(p);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const auto registered = containing(m.registered, ptr, 1, blockSize);
  const bool mapped = containing(m.host, ptr, 1, blockSize) != m.host.end() ||
                      (registered != m.registered.end() &&
                       (registered->second.flags & CU_MEMHOSTREGISTER_DEVICEMAP) != 0);
  if (!mapped) FAKE_RETURN(cuMemHostGetDevicePointer_v2, CUDA_ERROR_INVALID_VALUE);
  *pdptr = ptr;
  FAKE_RETURN(cuMemHostGetDevicePointer_v2, CUDA_SUCCESS);
}

// During a capture an allocation still gets its address at once (as graph
// allocations do) and becomes a mem alloc node; replays allocate nothing
// more.
#define FAKE_ALLOC_ASYNC(elf, per_thread)                                            \
  FAKE_EXPORT CUresult elf(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {   \
    FAKE_ENTER(elf);                                                                 \
    if (!fake::validStream(hStream)) FAKE_RETURN(elf, CUDA_ERROR_INVALID_HANDLE);    \
    const CUresult result = allocDevice(dptr, bytesize);                             \
    if (result == CUDA_SUCCESS &&                                                    \
        captureMemNode(hStream, per_thread, CU_GRAPH_NODE_TYPE_MEM_ALLOC, *dptr,     \
                       bytesize) == fake::Captured::kInvalidated) {                  \
      freeDevice(*dptr);                                                             \
      *dptr = 0;                                                                     \
      FAKE_RETURN(elf, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);                       \
    }                                                                                \
    FAKE_RETURN(elf, result);                                                        \
  }
FAKE_ALLOC_ASYNC(cuMemAllocAsync, false)
FAKE_ALLOC_ASYNC(cuMemAllocAsync_ptsz, true)

#define FAKE_ALLOC_FROM_POOL(elf)                                                    \
  FAKE_EXPORT CUresult elf(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,    \
                           CUstream hStream) {                                       \
    FAKE_ENTER(elf);                                                                 \
    if (pool == nullptr) FAKE_RETURN(elf, CUDA_ERROR_INVALID_VALUE);                 \
    if (!fake::validStream(hStream)) FAKE_RETURN(elf, CUDA_ERROR_INVALID_HANDLE);    \
    FAKE_RETURN(elf, allocDevice(dptr, bytesize));                                   \
  }
FAKE_ALLOC_FROM_POOL(cuMemAllocFromPoolAsync)
FAKE_ALLOC_FROM_POOL(cuMemAllocFromPoolAsync_ptsz)

// During a capture a free becomes a mem free node and frees nothing (nor do
// replays: the memory stays allocated, as a graph's reserved memory does).
#define FAKE_FREE_ASYNC(elf, per_thread)                                             \
  FAKE_EXPORT CUresult elf(CUdeviceptr dptr, CUstream hStream) {                     \
    FAKE_ENTER(elf);                                                                 \
    if (!fake::validStream(hStream)) FAKE_RETURN(elf, CUDA_ERROR_INVALID_HANDLE);    \
    if (isDevicePointer(dptr)) {                                                     \
      switch (captureMemNode(hStream, per_thread, CU_GRAPH_NODE_TYPE_MEM_FREE, dptr, 0)) { \
        case fake::Captured::kYes: FAKE_RETURN(elf, CUDA_SUCCESS);                   \
        case fake::Captured::kInvalidated:                                           \
          FAKE_RETURN(elf, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);                   \
        case fake::Captured::kNo: break;                                             \
      }                                                                              \
    }                                                                                \
    FAKE_RETURN(elf, freeDevice(dptr));                                              \
  }
FAKE_FREE_ASYNC(cuMemFreeAsync, false)
FAKE_FREE_ASYNC(cuMemFreeAsync_ptsz, true)

FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                 const CUmemAllocationProp* prop, unsigned long long flags) {
  FAKE_ENTER(cuMemCreate);
  if (!fake::initialized()) FAKE_RETURN(cuMemCreate, CUDA_ERROR_NOT_INITIALIZED);
  if (handle == nullptr || prop == nullptr || size == 0 || flags != 0) {
    FAKE_RETURN(cuMemCreate, CUDA_ERROR_INVALID_VALUE);
  }
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  *handle = m.next_handle;
  m.next_handle += 0x10;
  m.handles[*handle] = size;
  m.live_device_bytes += size;
  FAKE_RETURN(cuMemCreate, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKE_ENTER(cuMemRelease);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  auto it = m.handles.find(handle);
  if (it == m.handles.end()) FAKE_RETURN(cuMemRelease, CUDA_ERROR_INVALID_VALUE);
  m.live_device_bytes -= it->second;
  m.handles.erase(it);
  FAKE_RETURN(cuMemRelease, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                         CUdeviceptr addr, unsigned long long flags) {
  FAKE_ENTER(cuMemAddressReserve);
  (void)alignment;
  (void)addr;
  if (ptr == nullptr || size == 0 || flags != 0) {
    FAKE_RETURN(cuMemAddressReserve, CUDA_ERROR_INVALID_VALUE);
  }
  void* p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) FAKE_RETURN(cuMemAddressReserve, CUDA_ERROR_OUT_OF_MEMORY);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  m.reservations[reinterpret_cast<uint64_t>(p)] = size;
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  FAKE_RETURN(cuMemAddressReserve, CUDA_SUCCESS);
}

namespace {
bool insideReservation(Memory& m, CUdeviceptr ptr, size_t size) {
  auto it = m.reservations.upper_bound(ptr);
  if (it == m.reservations.begin()) return false;
  --it;
  return ptr + size <= it->first + it->second;
}
}  // namespace

FAKE_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags) {
  FAKE_ENTER(cuMemMap);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  auto h = m.handles.find(handle);
  if (flags != 0 || size == 0 || h == m.handles.end() || offset + size > h->second ||
      !insideReservation(m, ptr, size)) {
    FAKE_RETURN(cuMemMap, CUDA_ERROR_INVALID_VALUE);
  }
  if (overlaps(m.mapped, ptr, size, plainSize)) FAKE_RETURN(cuMemMap, CUDA_ERROR_INVALID_VALUE);
  void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) FAKE_RETURN(cuMemMap, CUDA_ERROR_OUT_OF_MEMORY);
  m.mapped[ptr] = size;
  FAKE_RETURN(cuMemMap, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FAKE_ENTER(cuMemUnmap);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (size == 0 || !insideReservation(m, ptr, size)) FAKE_RETURN(cuMemUnmap, CUDA_ERROR_INVALID_VALUE);
  void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) FAKE_RETURN(cuMemUnmap, CUDA_ERROR_INVALID_VALUE);
  // Mappings inside the range are gone (a mapping is unmapped whole).
  for (auto it = m.mapped.lower_bound(ptr); it != m.mapped.end() && it->first < ptr + size;) {
    it = m.mapped.erase(it);
  }
  FAKE_RETURN(cuMemUnmap, CUDA_SUCCESS);
}

FAKE_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FAKE_ENTER(cuMemAddressFree);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  auto it = m.reservations.find(ptr);
  if (it == m.reservations.end() || it->second != size) {
    FAKE_RETURN(cuMemAddressFree, CUDA_ERROR_INVALID_VALUE);
  }
  munmap(reinterpret_cast<void*>(ptr), size);
  m.reservations.erase(it);
  FAKE_RETURN(cuMemAddressFree, CUDA_SUCCESS);
}

namespace fake {

bool deviceAccessible(CUdeviceptr ptr, size_t bytes) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (containing(m.device, ptr, bytes, plainSize) != m.device.end()) return true;
  if (containing(m.mapped, ptr, bytes, plainSize) != m.mapped.end()) return true;
  if (containing(m.host, ptr, bytes, blockSize) != m.host.end()) return true;
  const auto registered = containing(m.registered, ptr, bytes, blockSize);
  return registered != m.registered.end() &&
         (registered->second.flags & CU_MEMHOSTREGISTER_DEVICEMAP) != 0;
}

}  // namespace fake

FAKE_EXPORT uint64_t fake_cuda_live_device_bytes(void) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  return m.live_device_bytes;
}
