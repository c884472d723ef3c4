// Every memory event of a memory bundle, in order, each with its pool
// (docs/memory-history.md): the torch bridge's allocator trace records
// (allocator_alloc .. allocator_oom) and the driver's memory records
// (cuMemAlloc*, cuMemFree*, cuMemCreate/Release/Map/Unmap, async allocs and
// frees, cuMemAddressReserve/Free, pinned host memory).
//
// The pool of an event and how it is known:
//  - trace: the allocator's trace entry carries the pool id (exact);
//  - segment: a driver call of the caching allocator (libc10_cuda*) whose
//    address lies in a segment of the allocator snapshot nearest to it,
//    before or after (the confidence: a call that allocates should be in the
//    snapshot after it, one that releases in the snapshot before it);
//  - trace_event: no snapshot holds it, but the allocator's own trace
//    event for it sits next to the call on the same thread: the segment
//    event (segment_alloc/free/map/unmap) covering the address, or for a
//    failed allocation the OOM event (exact pool, paired by address);
//  - outside: not the caching allocator's memory, but the calling library's
//    (NCCL, cuBLAS, ...; pinned host memory always);
//  - unknown: the allocator's, but no snapshot segment holds it (no
//    snapshot, or the segment lived between two snapshots).
//
// Events are compact fixed-size structs (no strings: pools, libraries and
// snapshots are indices into small tables) so that later analyses
// (lifetimes, attribution) can walk millions of them per second.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bundle/bundle.h"
#include "collectors/torch/snapshot_codec.h"
#include "model/driver_memory_replay.h"
#include "model/history_coverage.h"
#include "model/snapshot_assembly.h"
#include "records/record_catalog.h"

namespace tcgd::analyze {

enum class MemoryEventKind : uint8_t {
  // The caching allocator's trace (torch bridge, 1024 + TraceEntry::Action).
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kSnapshot,
  kOom,
  // The driver's memory calls (interpose/hooks.def).
  kDriverAlloc,     // cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAlloc*Async*
  kManagedAlloc,    // cuMemAllocManaged
  kDriverFree,      // cuMemFree_v2, cuMemFreeAsync*
  kCreate,          // cuMemCreate (address: the handle)
  kRelease,         // cuMemRelease (address: the handle)
  kMap,             // cuMemMap (aux: the handle)
  kUnmap,           // cuMemUnmap
  kReleaseFailed,   // a recorded release did not happen (address: the object)
  kAddressReserve,  // cuMemAddressReserve (address space only)
  kAddressFree,     // cuMemAddressFree
  kHostAlloc,       // cuMemHostAlloc, cuMemAllocHost_v2
  kHostFree,        // cuMemFreeHost
};
inline constexpr size_t kMemoryEventKinds = static_cast<size_t>(MemoryEventKind::kHostFree) + 1;

// "alloc", "free_requested", ..., "driver_alloc", "host_free".
const char* memoryEventKindName(MemoryEventKind kind);
bool isAllocatorTraceKind(MemoryEventKind kind);

enum class PoolSource : uint8_t { kTrace, kSegment, kTraceEvent, kOutside, kUnknown };
// "trace", "segment", "trace_event", "outside", "unknown"
const char* poolSourceName(PoolSource source);

// Where the matching snapshot was, relative to the event (PoolSource::kSegment).
enum class MatchSide : uint8_t { kNone, kBefore, kAfter };
const char* matchSideName(MatchSide side);  // "", "before", "after"

inline constexpr uint32_t kNoPool = UINT32_MAX;
inline constexpr uint16_t kNoLibrary = UINT16_MAX;
inline constexpr uint32_t kNoSnapshot = UINT32_MAX;

struct MemoryEvent {
  uint64_t sequence = 0;
  uint64_t time_ns = 0;  // CLOCK_MONOTONIC
  uint64_t address = 0;  // create/release: the handle; oom: 0
  uint64_t size = 0;     // oom: the requested size; releases: what they release (0 if unknown)
  uint64_t stream = 0;   // allocator events and async calls
  uint64_t aux = 0;      // map/unmap: the handle; oom: the device's free bytes
  uint32_t tid = 0;
  uint32_t pool = kNoPool;          // MemoryHistory::pools()
  uint32_t interval = 0;            // MemoryHistory::intervals()
  uint32_t snapshot = kNoSnapshot;  // PoolSource::kSegment: MemoryHistory::snapshots()
  uint16_t library = kNoLibrary;    // driver events: MemoryHistory::library()
  uint16_t type = 0;                // the record type (its schema name is the API)
  int16_t device = -1;              // -1: not known (a release of an unknown object)
  MemoryEventKind kind = MemoryEventKind::kAlloc;
  // source (bits 0-2), side (bits 3-4), failed (bit 5): one byte keeps the
  // event at 72 bytes (enum bit-fields with a fixed underlying type warn).
  uint8_t bits = static_cast<uint8_t>(PoolSource::kUnknown);

  PoolSource source() const { return static_cast<PoolSource>(bits & 7); }
  MatchSide side() const { return static_cast<MatchSide>((bits >> 3) & 3); }
  // The call returned an error: nothing changed.
  bool failed() const { return (bits & 0x20) != 0; }
  void setPool(uint32_t index, PoolSource from, MatchSide at = MatchSide::kNone) {
    pool = index;
    bits = static_cast<uint8_t>((bits & 0x20) | static_cast<uint8_t>(from) |
                                (static_cast<uint8_t>(at) << 3));
  }
  void setFailed() { bits |= 0x20; }
};
static_assert(sizeof(MemoryEvent) == 72, "keep events compact");

// One decoded allocator snapshot, its segments by address.
struct HistorySnapshot {
  uint64_t point_ordinal = 0;
  uint64_t sequence = 0;  // of its first record: when it was taken (may be after its point)
  struct Segment {
    uint64_t address;
    uint64_t end;
    uint32_t pool;
    int16_t device;
  };
  std::vector<Segment> segments;
  // Its allocated (or freed but still active) blocks, by address, with the
  // stack blob of their allocation (0: none): lifetimes start from them.
  struct Block {
    uint64_t address;
    uint64_t size;
    uint64_t stack;
    uint32_t pool;
    int16_t device;
    bool free_requested;  // active, no longer allocated: freed, awaiting a stream
  };
  std::vector<Block> blocks;
};

// The native stack of a driver allocation (its native_stack record,
// docs/memory-stacks.md): `event` is the allocation's index in events().
struct EventStack {
  size_t event = 0;
  uint64_t hash = 0;
  uint64_t blob = 0;  // 0: not stored (the hash still names it)
};

// The events between two consecutive points (by sequence), and whether the
// history there is complete (model/history_coverage.h).
struct HistoryInterval {
  const bundle::Point* after = nullptr;   // null: the start of the recording
  const bundle::Point* before = nullptr;  // null: after the last point
  std::string history = "complete";
  uint64_t dropped = 0;
  bool complete() const { return history == "complete"; }
  size_t first_event = 0;  // events [first_event, end_event)
  size_t end_event = 0;
};

class MemoryHistory {
 public:
  const std::vector<MemoryEvent>& events() const { return events_; }
  // points().size() + 1 intervals: interval i ends at the i-th point by sequence.
  const std::vector<HistoryInterval>& intervals() const { return intervals_; }
  const std::vector<HistorySnapshot>& snapshots() const { return snapshots_; }
  const std::vector<torchbridge::PoolId>& pools() const { return pools_; }
  const std::string& library(uint16_t index) const { return libraries_[index]; }
  size_t libraryCount() const { return libraries_.size(); }
  // The point a snapshot was taken for.
  const bundle::Point* snapshotPoint(uint32_t snapshot) const;
  // For analyses that need complete history: throws AnalyzeError naming
  // `analysis` and the first interval in [first, last] that is not complete.
  void requireComplete(size_t first, size_t last, std::string_view analysis) const;
  // "start -> \"p1\"", "\"p1\" -> \"p2\"", "\"p3\" -> end".
  std::string intervalName(size_t interval) const;
  uint32_t findPool(const torchbridge::PoolId& pool) const;  // kNoPool when none
  // The native stack of event `index`, or null (by event, ascending).
  const EventStack* nativeStack(size_t index) const;
  const std::vector<EventStack>& nativeStacks() const { return native_stacks_; }
  // Event batches that did not decode (their records are missing).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  friend class HistoryBuilder;
  friend MemoryHistory buildMemoryHistory(const Bundle& bundle);
  std::vector<std::string> warnings_;
  std::vector<MemoryEvent> events_;
  std::vector<HistoryInterval> intervals_;
  std::vector<HistorySnapshot> snapshots_;  // by sequence
  std::vector<torchbridge::PoolId> pools_;
  std::vector<std::string> libraries_;
  std::vector<const bundle::Point*> snapshot_points_;
  std::vector<EventStack> native_stacks_;
};

// Builds a MemoryHistory from records fed in sequence order. Separate from
// the bundle's streaming so a benchmark can feed records from memory.
class HistoryBuilder {
 public:
  explicit HistoryBuilder(const Bundle& bundle);
  // Room for `events` events, so a large history is not copied as it grows.
  void reserve(size_t events) { history_.events_.reserve(events); }
  void observe(const proto::DecodedRecord& record);
  // Resolves the pools of driver events against the snapshots and fills
  // the intervals (how complete each is, when `completeness`:
  // model/history_coverage.h).
  MemoryHistory finish(bool completeness = true);

 private:
  uint8_t kindOf(uint16_t type);
  uint32_t internPool(uint64_t first, uint64_t second);
  uint16_t internLibrary(uint32_t replay_library);
  void observeDriver(const proto::DecodedRecord& record, MemoryEventKind kind, bool stream_word,
                     MemoryEvent& event);
  void decodeSnapshots();
  void resolvePools();
  void fillIntervals(bool completeness);

  const Bundle& bundle_;
  const RecordCatalog catalog_;
  DriverMemoryReplay replay_;
  MemoryHistory history_;
  std::vector<uint64_t> point_sequences_;  // sorted
  std::vector<const bundle::Point*> points_by_sequence_;
  size_t next_point_ = 0;
  std::vector<uint8_t> kinds_;  // by record type: kind + 1, 0 none, 0xff unclassified
  uint64_t last_pool_key_[2] = {UINT64_MAX, UINT64_MAX};
  uint32_t last_pool_ = kNoPool;
  std::vector<uint16_t> library_map_;  // replay library -> history library
  SnapshotAssembly snapshots_;
  HistoryCoverage coverage_;  // points and allocator_status records, for the intervals
  // Sizes and libraries of what releases name without saying them.
  std::unordered_map<uint64_t, std::pair<uint64_t, uint16_t>> host_allocations_;
  std::unordered_map<uint64_t, uint16_t> reservations_;
  // native_stack records waiting for their allocation, by thread.
  struct PendingStack {
    uint64_t type, object, hash, blob;
  };
  std::unordered_map<uint32_t, PendingStack> pending_stacks_;
};

// Reads the whole bundle (loaded with LoadOptions::keep_bulk_blobs).
MemoryHistory buildMemoryHistory(const Bundle& bundle);

}  // namespace tcgd::analyze
