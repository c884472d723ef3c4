// What each record type of a bundle is, looked up once: the kinds of
// records/record_kinds.def matched against the names in the bundle's schemas, kept
// in a table by type id. Analyses ask catalog.kind(record.type) instead of
// comparing schema names, and read the words through the typed views
// (records/memory_records.h, records/graph_records.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "bundle/bundle.h"

namespace tcgd::analyze {

enum class RecordKind : uint8_t {
  kNone,  // not one the analyses read (dump and info still show it)
  kPoint,
  // The allocator trace, in TraceEntry::Action order (contiguous: see
  // traceAction()), then the bridge's other records.
  kTraceAlloc,
  kTraceFreeRequested,
  kTraceFreeCompleted,
  kTraceSegmentAlloc,
  kTraceSegmentFree,
  kTraceSegmentMap,
  kTraceSegmentUnmap,
  kTraceSnapshotTaken,
  kTraceOom,
  kAllocatorSnapshot,
  kAllocatorStatus,
  // Device and pinned host memory calls.
  kMemAlloc,  // cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAlloc*Async*
  kMemAllocManaged,
  kMemFree,  // cuMemFree_v2, cuMemFreeAsync*
  kMemCreate,
  kMemRelease,
  kMemMap,
  kMemUnmap,
  kMemRetain,
  kAddressReserve,
  kAddressFree,
  kHostAlloc,  // cuMemHostAlloc, cuMemAllocHost_v2
  kHostFree,
  kMemGetInfo,
  kReleaseFailed,
  kPointDeviceMemory,
  kPointOtherProcesses,
  kNativeStack,
  // Capture, graphs and launches.
  kCaptureBegin,  // cuStreamBeginCapture*
  kCaptureEnd,    // cuStreamEndCapture*
  kInstantiate,   // cuGraphInstantiate*
  kGraphLaunch,   // cuGraphLaunch*, cudaGraphLaunch*
  kExecDestroy,
  kGraphDestroy,
  kKernelLaunch,  // cuLaunchKernel*, cuLaunchCooperativeKernel*
  kKernelName,
  kGraphInventory,
  kGraphKernelNode,
  kGraphMemNode,
  kGraphNodeTypes,
  // Tensor probes.
  kTensorSite,
  kTensorKernel,
  kTensorStatus,
  kTensorCaptureBegin,
  kTensorCaptureEnd,
};

// The kind a schema name has by the table (kNone when no row matches).
RecordKind recordKindOf(std::string_view name);
// Whether the call named `name` carries its stream in word 4.
bool streamInWord4(std::string_view name);

// An allocator trace kind's TraceEntry::Action (0 alloc .. 8 oom), or -1.
inline int traceAction(RecordKind kind) {
  const int k = static_cast<int>(kind) - static_cast<int>(RecordKind::kTraceAlloc);
  return k >= 0 && k <= 8 ? k : -1;
}

class RecordCatalog {
 public:
  explicit RecordCatalog(const SchemaTable& schemas);
  explicit RecordCatalog(const Bundle& bundle) : RecordCatalog(bundle.schemas()) {}

  RecordKind kind(uint32_t type) const {
    return type < entries_.size() ? entries_[type].kind : RecordKind::kNone;
  }
  bool is(uint32_t type, RecordKind kind) const { return this->kind(type) == kind; }
  bool streamInWord4(uint32_t type) const {
    return type < entries_.size() && entries_[type].stream_word;
  }

 private:
  struct Entry {
    RecordKind kind = RecordKind::kNone;
    bool stream_word = false;
  };
  std::vector<Entry> entries_;  // by type id
};

}  // namespace tcgd::analyze
