// The words of the memory records, read in one place. Layouts are the
// agent's: interpose/hooks.def (driver calls), collectors/record_types.h
// (collectors' records), collectors/torch/torch_records.h (the torch
// bridge), agent/channel/record.h (points). Each view is a plain struct made
// from a decoded record of its kind (records/record_catalog.h says which).
#pragma once

#include <cstdint>

#include "event_codec.h"

namespace tcgd::analyze {

// Halves of a "low:u32,high:u32" word.
inline uint32_t lowHalf(uint64_t word) { return static_cast<uint32_t>(word); }
inline uint32_t highHalf(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
inline int32_t highHalfSigned(uint64_t word) { return static_cast<int32_t>(highHalf(word)); }

// A point record: name:blob, origin, ordinal, drops_before (records dropped,
// all classes, since the session began).
struct PointRecord {
  uint64_t name_blob = 0;
  uint64_t origin = 0;
  uint64_t ordinal = 0;
  uint64_t drops_before = 0;
  static PointRecord of(const proto::DecodedRecord& r) {
    return {r.words[0], r.words[1], r.words[2], r.words[3]};
  }
};

// A driver memory call (cuMemAlloc*, cuMemFree*, cuMemCreate/Release/Map/
// Unmap/RetainAllocationHandle, cuMemAddressReserve/Free, cuMemHostAlloc,
// cuMemAllocHost_v2, cuMemFreeHost). Word by word:
//   0  the pointer; the handle for cuMemCreate, cuMemRelease and
//      cuMemRetainAllocationHandle
//   1  the size (0 where the call names none); cuMemRetainAllocationHandle:
//      the pointer
//   2  result (low half); allocations and cuMemCreate: device (high half)
//   3  the caller; cuMemMap: the handle mapped
//   4  the stream of the async calls (RecordCatalog::streamInWord4);
//      cuMemCreate: the location
struct MemoryCallRecord {
  uint64_t object = 0;
  uint64_t size = 0;
  uint32_t result = 0;
  int32_t device = 0;
  uint64_t caller = 0;
  uint64_t word4 = 0;
  bool succeeded() const { return result == 0; }
  uint64_t mapHandle() const { return caller; }  // cuMemMap
  uint64_t retainPointer() const { return size; }  // cuMemRetainAllocationHandle
  static MemoryCallRecord of(const proto::DecodedRecord& r) {
    return {r.words[0], r.words[1], lowHalf(r.words[2]), highHalfSigned(r.words[2]),
            r.words[3], r.words[4]};
  }
};

// release_failed: a release recorded before it was forwarded did not happen.
struct ReleaseFailedRecord {
  uint64_t object = 0;         // as in the release record
  uint32_t release_type = 0;   // the release's record type
  uint32_t result = 0;
  static ReleaseFailedRecord of(const proto::DecodedRecord& r) {
    return {r.words[0], static_cast<uint32_t>(r.words[1]), lowHalf(r.words[2])};
  }
};

// cuMemGetInfo_v2: free, total, result (low) | device (high).
struct MemGetInfoRecord {
  uint64_t free = 0;
  uint64_t total = 0;
  uint32_t result = 0;
  int32_t device = 0;
  static MemGetInfoRecord of(const proto::DecodedRecord& r) {
    return {r.words[0], r.words[1], lowHalf(r.words[2]), highHalfSigned(r.words[2])};
  }
};

// point_device_memory: the agent's cuMemGetInfo_v2 at a point.
struct PointDeviceMemoryRecord {
  uint64_t ordinal = 0;
  uint64_t free = 0;
  uint64_t total = 0;
  uint32_t result = 0;
  int32_t device = 0;
  static PointDeviceMemoryRecord of(const proto::DecodedRecord& r) {
    return {r.words[0], r.words[1], r.words[2], lowHalf(r.words[3]), highHalfSigned(r.words[3])};
  }
};

// point_other_processes: what NVML said other processes held at a point.
struct PointOtherProcessesRecord {
  uint64_t ordinal = 0;
  int32_t device = 0;
  uint64_t bytes = 0;
  uint32_t processes = 0;
  uint32_t flags = 0;   // collectors/record_types.h kOtherProcesses*
  uint32_t status = 0;  // OtherProcessesStatus
  uint32_t nvml_result = 0;
  static PointOtherProcessesRecord of(const proto::DecodedRecord& r) {
    return {r.words[0],        static_cast<int32_t>(lowHalf(r.words[1])), r.words[2],
            lowHalf(r.words[3]), highHalf(r.words[3]), lowHalf(r.words[4]),
            highHalf(r.words[4])};
  }
};

// native_stack: the stack of the allocation record that follows it on the
// same thread.
struct NativeStackRecord {
  uint64_t blob = 0;  // BlobKind::kStack; 0 when not stored
  uint16_t alloc_type = 0;  // the allocation's record type
  uint8_t frames = 0;
  uint8_t status = 0;  // NativeStackStatus
  uint8_t truncated = 0;
  uint64_t object = 0;  // the allocation's word 0 (0 when the call failed)
  uint64_t hash = 0;    // of the frames: equal hashes are equal stacks
  static NativeStackRecord of(const proto::DecodedRecord& r) {
    return {r.words[0],
            static_cast<uint16_t>(r.words[1]),
            static_cast<uint8_t>(r.words[1] >> 16),
            static_cast<uint8_t>(r.words[1] >> 24),
            static_cast<uint8_t>(r.words[1] >> 32),
            r.words[2],
            r.words[3]};
  }
};

// An allocator trace record (allocator_alloc .. allocator_oom): address,
// size, stream, pool id; flags: the device. allocator_snapshot_taken: word 1
// is the active total; allocator_oom: word 0 is the device's free bytes.
struct AllocatorTraceRecord {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint64_t pool_first = 0;
  uint64_t pool_second = 0;
  uint8_t device = 0;
  static AllocatorTraceRecord of(const proto::DecodedRecord& r) {
    return {r.words[0], r.words[1], r.words[2], r.words[3], r.words[4], r.flags};
  }
};

// One part of a point's allocator snapshot: ordinal, data:blob, part |
// parts << 32, total bytes, format | status << 16.
struct SnapshotPartRecord {
  uint64_t ordinal = 0;
  uint64_t blob = 0;  // 0: the part could not be pushed
  uint32_t part = 0;
  uint32_t parts = 0;
  uint64_t total_bytes = 0;
  uint16_t format = 0;
  uint16_t status = 0;  // 0 taken, 1 unavailable, 2 failed, 3 not initialized
  static SnapshotPartRecord of(const proto::DecodedRecord& r) {
    return {r.words[0],
            r.words[1],
            lowHalf(r.words[2]),
            highHalf(r.words[2]),
            r.words[3],
            static_cast<uint16_t>(r.words[4]),
            static_cast<uint16_t>(r.words[4] >> 16)};
  }
};

// allocator_status: the torch bridge's TorchStatus.
struct AllocatorStatusRecord {
  uint32_t status = 0;
  static AllocatorStatusRecord of(const proto::DecodedRecord& r) {
    return {static_cast<uint32_t>(r.words[0])};
  }
};

}  // namespace tcgd::analyze
