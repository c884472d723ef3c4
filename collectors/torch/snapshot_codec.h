// The allocator snapshot blob (BlobKind::kSnapshot) and its arithmetic.
//
// The bridge turns PyTorch's CUDACachingAllocator::snapshot() into an
// AllocatorSnapshot (segments with their blocks), encodes it, and pushes the
// bytes in parts of at most the channel's blob limit. Readers (recorder,
// analyzer) reassemble the parts (SnapshotParts), decode them, and compute
// per device / pool / stream figures (aggregateSnapshot). Nothing here
// depends on torch; the layout is in docs/torch-bridge.md, section
// "Snapshot blob".
//
// Kept C++17-clean: the bridge is compiled as C++17, like torch itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tcgd::torchbridge {

// PyTorch's MempoolId_t: {0,0} the default pool, {n,0} a graph-private pool
// (capture n), {0,n} a user MemPool.
struct PoolId {
  uint64_t first = 0;
  uint64_t second = 0;
  bool operator==(const PoolId& o) const { return first == o.first && second == o.second; }
  bool operator!=(const PoolId& o) const { return !(*this == o); }
  bool operator<(const PoolId& o) const {
    return first != o.first ? first < o.first : second < o.second;
  }
};

enum class PoolKind { kDefault, kGraph, kUser, kOther };
PoolKind poolKind(const PoolId& pool);
const char* poolKindName(PoolKind kind);  // "default", "graph", "user", "other"

struct SnapshotBlock {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested_size = 0;
  uint64_t stack = 0;  // blob id of the allocation's stack (BlobKind::kStack), 0 when none
  bool allocated = false;
  bool active = false;  // allocated, or freed but still in use by a stream
};

struct SnapshotSegment {
  uint64_t address = 0;
  uint64_t total_size = 0;  // reserved bytes: the segment's mapped size
  // PyTorch's own per-segment sums: allocated blocks, active blocks, and the
  // requested sizes of active blocks.
  uint64_t allocated_size = 0;
  uint64_t active_size = 0;
  uint64_t requested_size = 0;
  uint64_t stream = 0;  // cudaStream_t the segment was allocated for
  PoolId pool;
  int16_t device = 0;
  bool is_large = false;
  bool is_expandable = false;
  uint64_t stack = 0;  // stack of the segment's allocation, 0 when none
  std::vector<SnapshotBlock> blocks;  // in address order
};

// Header flags.
inline constexpr uint32_t kSnapshotHasStacks = 1u << 0;       // stack ids were filled
inline constexpr uint32_t kSnapshotStacksPartial = 1u << 1;   // some stacks could not be stored
inline constexpr uint32_t kSnapshotExpandableSetting = 1u << 2;  // expandable_segments:True in force

struct AllocatorSnapshot {
  uint64_t point_ordinal = 0;
  uint64_t time_ns = 0;  // CLOCK_MONOTONIC when taken
  uint32_t flags = 0;
  std::vector<SnapshotSegment> segments;
};

// Fixed sizes of format version 1.
inline constexpr uint16_t kSnapshotVersion = 1;
inline constexpr size_t kSnapshotHeaderBytes = 48;
inline constexpr size_t kSnapshotSegmentBytes = 80;
inline constexpr size_t kSnapshotBlockBytes = 40;

std::vector<uint8_t> encodeSnapshot(const AllocatorSnapshot& snapshot);

// Decodes one whole encoded snapshot. On failure returns false and *error
// says what is wrong and where. Accepts later versions' larger header and
// record sizes (fields appended at the end are skipped); refuses newer
// format versions.
bool decodeSnapshot(const void* data, size_t size, AllocatorSnapshot* out, std::string* error);

// Reassembles the parts of one snapshot (one "allocator_snapshot" record per
// part: part index, part count, total bytes, blob bytes).
class SnapshotParts {
 public:
  // False (and the assembly becomes invalid) when the part contradicts what
  // came before: another part count or total, an index out of range, a
  // repeated part, or more bytes than the total.
  bool add(uint32_t part, uint32_t parts, uint64_t total_bytes, const void* data, size_t size);
  bool complete() const;
  bool valid() const { return valid_; }
  // The concatenated parts; meaningful once complete().
  std::vector<uint8_t> bytes() const;

 private:
  bool valid_ = true;
  uint32_t parts_ = 0;
  uint64_t total_ = 0;
  uint64_t received_bytes_ = 0;
  std::vector<std::vector<uint8_t>> data_;
  std::vector<bool> have_;
};

// Figures over a set of segments.
struct AllocatorFigures {
  uint64_t reserved = 0;   // sum of segment total_size
  uint64_t allocated = 0;  // sum of segment allocated_size
  uint64_t active = 0;     // sum of segment active_size
  uint64_t requested = 0;  // sum of segment requested_size
  uint64_t segments = 0;
  uint64_t large_segments = 0;
  uint64_t blocks = 0;
  uint64_t allocated_blocks = 0;
  uint64_t pending_free_blocks = 0;  // active but not allocated (freed, awaiting a stream)
  uint64_t inactive_blocks = 0;      // neither: free cached space inside segments
  uint64_t inactive_bytes = 0;
  uint64_t largest_inactive = 0;     // the largest inactive block
  uint64_t expandable_segments = 0;
  uint64_t expandable_reserved = 0;   // mapped bytes of expandable segments
  uint64_t expandable_allocated = 0;  // allocated bytes inside them

  // active - allocated: freed by the job, still held for a stream.
  uint64_t awaitingFree() const { return active - allocated; }
  // reserved - active: cached, reusable.
  uint64_t inactive() const { return reserved - active; }

  void addSegment(const SnapshotSegment& segment);
  void merge(const AllocatorFigures& other);
};

struct StreamFigures {
  uint64_t stream = 0;
  AllocatorFigures figures;
};

struct PoolFigures {
  PoolId pool;
  AllocatorFigures figures;
  std::vector<StreamFigures> streams;  // by stream value
};

struct DeviceFigures {
  int16_t device = 0;
  AllocatorFigures total;
  std::vector<PoolFigures> pools;      // by pool id
  std::vector<StreamFigures> streams;  // all pools, by stream value
};

// Per device (ascending), per pool and per stream. Every segment counts once
// in its device total, once in its pool and once in its stream, so the pools
// of a device sum to its total, and so do its streams.
std::vector<DeviceFigures> aggregateSnapshot(const AllocatorSnapshot& snapshot);

}  // namespace tcgd::torchbridge
