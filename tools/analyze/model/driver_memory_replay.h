// What explains the residual at a point (CUDA used - allocator reserved):
// device memory allocated outside PyTorch's caching allocator, by library,
// replayed from the driver allocation records up to each point, and what
// other processes held (point_other_processes, from NVML).
//
// The replay is one pass over the records in file order with hash maps
// (DriverMemoryReplay::observe), taking a per-device, per-library total at
// each point's sequence. Rules:
//  - A call whose result is not 0 changed nothing.
//  - Releases are recorded before they are forwarded; a release_failed
//    record after one says it did not happen, and the replay undoes it.
//  - An address allocated again without a release in between (a lost
//    release record) replaces the earlier allocation: counted once.
//  - VMM memory (cuMemCreate) is live while its handle is unreleased or
//    mapped: NCCL releases handles right after cuMemMap, so the memory stays
//    until cuMemUnmap. It counts the handle's size once, on the device of
//    its location, attributed to cuMemCreate's caller. Host-located handles
//    and cuMemAddressReserve (address space only) are not device memory.
//  - cuMemAllocManaged is kept apart (`managed`): its pages reach a device
//    only when touched, so what is resident shows up in `rest`.
//  - Pinned host memory (cuMemHostAlloc, cuMemAllocHost) is left out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "bundle/bundle.h"
#include "event_codec.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {

// PyTorch's caching allocator: callers in libc10_cuda*.
bool isAllocatorLibrary(const std::string& library);

// The driver-level state of one device at a point.
struct DeviceDriverMemory {
  uint64_t allocator = 0;                   // live bytes whose caller is libc10_cuda*
  uint64_t managed = 0;                     // live cuMemAllocManaged bytes (any caller)
  std::map<std::string, uint64_t> outside;  // other callers, by library basename ("unknown")
  uint64_t outsideTotal() const;
};

// What NVML said other processes held on a device at a point.
struct OtherProcessesAtPoint {
  uint64_t bytes = 0;
  uint32_t processes = 0;
  uint32_t flags = 0;   // collectors/record_types.h kOtherProcesses*
  uint32_t status = 0;  // OtherProcessesStatus
  uint32_t nvml_result = 0;
  bool ok() const { return status == 0; }
  bool selfSeen() const { return (flags & 1) != 0; }
  bool sizeUnknown() const { return (flags & 2) != 0; }
  // "nvml unavailable", "device not found in NVML", ...; "ok" for 0.
  std::string statusText() const;
};

class DriverMemoryReplay {
 public:
  // `point_sequences`: the points' sequences in point order.
  DriverMemoryReplay(const Bundle& bundle, std::vector<uint64_t> point_sequences);

  // What a record of a kind is to the replay.
  enum class Op : uint8_t {
    kNone,
    kAlloc,
    kManaged,
    kFree,
    kCreate,
    kRelease,
    kMap,
    kUnmap,
    kReleaseFailed,
    kRetain  // cuMemRetainAllocationHandle: one more reference to a handle
  };
  static constexpr uint32_t kNoLibrary = UINT32_MAX;
  // What observe() made of the last record, for readers that follow the
  // events one by one (memory_history.h). A release takes its size, device
  // and library from what it releases; cuMemUnmap from the first mapping in
  // its range (it names no caller).
  struct Effect {
    Op op = Op::kNone;
    bool succeeded = true;  // the call returned 0 (releases: recorded before the call)
    bool known = false;     // a release: what it releases was allocated while recording
    int32_t device = -1;
    uint32_t library = kNoLibrary;  // libraryName()
    uint64_t size = 0;
    uint64_t handle = 0;  // cuMemMap, cuMemUnmap: the handle mapped
  };

  void observe(const proto::DecodedRecord& record);
  const Effect& lastEffect() const { return effect_; }
  static Op opOf(RecordKind kind);
  // The library of a caller address (module basename, "unknown"), interned.
  uint32_t libraryOf(uint64_t caller);
  const std::string& libraryName(uint32_t library) const { return libraries_[library]; }
  bool isAllocator(uint32_t library) const { return library_is_allocator_[library]; }
  // Takes the state for the points not reached yet (those after the last record).
  void finish();

  // By device, at point `index` (in the order given to the constructor).
  const std::map<int32_t, DeviceDriverMemory>& atPoint(size_t index) const {
    return at_points_[index];
  }
  // Any driver memory record was seen (the split has something to say).
  bool sawDriverMemory() const { return saw_driver_memory_; }
  // cuMemMap of a handle whose cuMemCreate was not recorded (not counted).
  uint64_t unknownHandleMaps() const { return unknown_handle_maps_; }

 private:
  struct Allocation {
    uint64_t size;
    int32_t device;
    uint32_t library;  // index into libraries_
    bool managed;
  };
  struct Handle {
    uint64_t size;
    int32_t device;  // -1: not device memory
    uint32_t library;
    uint32_t mappings = 0;
    uint32_t references = 1;  // cuMemCreate's, plus one per cuMemRetainAllocationHandle
    bool released = false;    // every reference released
  };
  struct Mapping {
    uint64_t size;
    uint64_t handle;
  };
  // What a pending release removed, to put back on release_failed.
  struct Undo {
    std::optional<Allocation> allocation;
    bool handle_release = false;    // the last reference: `released` was set
    bool reference_dropped = false;  // an earlier reference: `references` went down
    std::vector<std::pair<uint64_t, Mapping>> mappings;
    std::vector<std::pair<uint64_t, Handle>> dropped_handles;  // as they were when dropped
  };

  void add(int32_t device, uint32_t library, uint64_t size, bool managed, int64_t sign);
  // Drops a released handle with no mapping left, saving it in `undo`.
  void handleDead(uint64_t id, Undo& undo);
  void takePointsBefore(uint64_t sequence);

  const Bundle& bundle_;
  const RecordCatalog catalog_;
  std::vector<uint64_t> point_sequences_;
  size_t next_point_ = 0;
  std::vector<std::map<int32_t, DeviceDriverMemory>> at_points_;
  std::unordered_map<uint64_t, uint32_t> caller_library_;
  std::vector<std::string> libraries_;
  std::vector<bool> library_is_allocator_;
  std::unordered_map<uint64_t, Allocation> allocations_;
  std::unordered_map<uint64_t, Handle> handles_;
  std::map<uint64_t, Mapping> mappings_;                   // ordered: cuMemUnmap takes a range
  std::map<std::pair<uint32_t, uint64_t>, Undo> pending_;  // (release type, object)
  // Running totals: (device, library) -> bytes; managed bytes by device.
  std::map<std::pair<int32_t, uint32_t>, int64_t> live_;
  std::map<int32_t, int64_t> live_managed_;
  Effect effect_;
  bool saw_driver_memory_ = false;
  uint64_t unknown_handle_maps_ = 0;
};

}  // namespace tcgd::analyze
