// Record types of the torch bridge (range 1024..1279, agent/channel/record.h).
// Never renumber: ids are stored in bundles. docs/torch-bridge.md describes
// each word.
//
// The table is registered by the agent (agent/torch_loader.cpp), not by the
// bridge: the schema goes out at session start, possibly long before the
// bridge is loaded, and must describe these records even when it never is.
// The bridge includes this header for the ids only.
#pragma once

#include <cstdint>

#include "schema.h"

namespace tcgd::torchbridge {

// One record per TraceEntry: type = kRecordTraceBase + TraceEntry::Action
// (ALLOC=0 ... OOM=8, the enum order of c10/core/CachingDeviceAllocator.h in
// torch 2.11; the bridge static_asserts it).
inline constexpr uint16_t kRecordTraceBase = 1024;
inline constexpr uint16_t kRecordAlloc = 1024;
inline constexpr uint16_t kRecordFreeRequested = 1025;
inline constexpr uint16_t kRecordFreeCompleted = 1026;
inline constexpr uint16_t kRecordSegmentAlloc = 1027;
inline constexpr uint16_t kRecordSegmentFree = 1028;
inline constexpr uint16_t kRecordSegmentMap = 1029;
inline constexpr uint16_t kRecordSegmentUnmap = 1030;
inline constexpr uint16_t kRecordSnapshotTaken = 1031;
inline constexpr uint16_t kRecordTraceOom = 1032;
inline constexpr uint16_t kRecordTraceLast = kRecordTraceOom;

// The OOM observer's call: a0 device, a1 requested, a2 device total (or the
// memory-fraction limit), a3 device free. The agent's points code makes an
// "oom" point after it (agent/torch_loader.h, torchTakeOomPending).
inline constexpr uint16_t kRecordOomObserved = 1040;

// One per snapshot part: a0 point ordinal, a1 blob id (BlobKind::kSnapshot,
// 0 when none), a2 part (low 32 bits) and parts (high 32), a3 total bytes
// of all parts, a4 format version (low 16) and SnapshotStatus (next 16).
// Concatenating the parts in order gives one encoded snapshot
// (collectors/torch/snapshot_codec.h).
inline constexpr uint16_t kRecordSnapshot = 1041;

// What the torch side of the agent could or could not do: a0 TorchStatus,
// a1 detail (kString blob: the message shown to the user, or 0), a2 the
// running torch version (kString blob, or 0), a3 TCGD_MEMORY_STACKS in force.
// Intervals before a kAttached status have no allocator history.
inline constexpr uint16_t kRecordStatus = 1042;

enum class TorchStatus : uint32_t {
  kAttached = 1,            // tracker and OOM observer attached: history complete from here
  kBackendUnavailable = 2,  // the allocator backend refuses trackers (cudaMallocAsync)
  kVersionMismatch = 3,     // running torch differs from the bridge's
  kBridgeMissing = 4,       // no libtcgd_torch.so where the agent looked
  kBridgeLoadFailed = 5,    // dlopen, symbols or ABI check failed
  kAttachFailed = 6,        // PyTorch raised while attaching
  kStacksOn = 7,            // tcgd turned PyTorch's history on for stacks
  kStacksFromJob = 8,       // the job's own history was already on: its stacks are used
  kStacksUnavailable = 9,   // stacks requested but history could not be turned on
  kVersionUnreadable = 10,  // libc10_cuda.so found, but no readable torch version
  kDisabled = 11,           // TCGD_TORCH_BRIDGE=off
};

enum class SnapshotStatus : uint16_t {
  kTaken = 0,
  kUnavailable = 1,  // the backend has no snapshot
  kFailed = 2,       // PyTorch raised
  kNotInitialized = 3,  // the caching allocator was not initialized: nothing reserved
};

inline constexpr uint16_t kSnapshotFormatVersion = 1;

inline constexpr agent::RecordTypeInfo kTorchRecordTypes[] = {
#define TCGD_TRACE_WORDS {"addr:hex", "size:u64", "stream:hex", "pool_id_0:u64", "pool_id_1:u64"}
    {kRecordAlloc, channel::RecordClass::kAllocator, "allocator_alloc", TCGD_TRACE_WORDS,
     "device:u8"},
    {kRecordFreeRequested, channel::RecordClass::kAllocator, "allocator_free_requested",
     TCGD_TRACE_WORDS, "device:u8"},
    {kRecordFreeCompleted, channel::RecordClass::kAllocator, "allocator_free_completed",
     TCGD_TRACE_WORDS, "device:u8"},
    {kRecordSegmentAlloc, channel::RecordClass::kAllocator, "allocator_segment_alloc",
     TCGD_TRACE_WORDS, "device:u8"},
    {kRecordSegmentFree, channel::RecordClass::kAllocator, "allocator_segment_free",
     TCGD_TRACE_WORDS, "device:u8"},
    {kRecordSegmentMap, channel::RecordClass::kAllocator, "allocator_segment_map",
     TCGD_TRACE_WORDS, "device:u8"},
    {kRecordSegmentUnmap, channel::RecordClass::kAllocator, "allocator_segment_unmap",
     TCGD_TRACE_WORDS, "device:u8"},
#undef TCGD_TRACE_WORDS
    {kRecordSnapshotTaken, channel::RecordClass::kAllocator, "allocator_snapshot_taken",
     {"", "total_active:u64", "", "pool_id_0:u64", "pool_id_1:u64"}, "device:u8"},
    {kRecordTraceOom, channel::RecordClass::kAllocator, "allocator_oom",
     {"device_free:u64", "size:u64", "stream:hex", "pool_id_0:u64", "pool_id_1:u64"},
     "device:u8"},
    {kRecordOomObserved, channel::RecordClass::kAllocator, "allocator_oom_observed",
     {"device:i64", "requested:u64", "device_total:u64", "device_free:u64", ""}, nullptr},
    {kRecordSnapshot, channel::RecordClass::kAllocator, "allocator_snapshot",
     {"ordinal:u64", "data:blob", "part:u32,parts:u32", "total_bytes:u64",
      "format:u16,status:u16"},
     nullptr},
    {kRecordStatus, channel::RecordClass::kAllocator, "allocator_status",
     {"status:u32", "detail:blob", "torch_version:blob", "stacks:u8", ""}, nullptr},
};

}  // namespace tcgd::torchbridge
