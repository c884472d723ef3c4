// Allocation lifetimes from the memory history (memory_history.h): each
// allocation from its birth to its free, at three levels kept apart:
//  - block: the caching allocator's blocks (trace alloc, free requested,
//    free completed);
//  - segment: the allocator's segments (trace segment alloc/free, and for
//    expandable segments each mapped range, segment map/unmap);
//  - driver: driver memory (cuMemAlloc*, cuMemAllocManaged, cuMemMap of
//    physical memory, their frees and unmaps).
//
// An address freed and allocated again is two lifetimes. An unmap closes
// every mapping inside its range (expandable segments unmap several at
// once). Reconstruction may start from a point's allocator snapshot (the
// seed): its blocks and segments are live there, born at or before it.
// Without a seed, a free of an address with no open lifetime opens one whose
// birth is unknown (it came before the history). See docs/memory.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "model/memory_history.h"

namespace tcgd::analyze {

enum class LifetimeLevel : uint8_t { kBlock, kSegment, kDriver };
const char* lifetimeLevelName(LifetimeLevel level);  // "block", "segment", "driver"

inline constexpr uint32_t kNoEvent = UINT32_MAX;
inline constexpr uint32_t kNoStack = 0;

struct Lifetime {
  uint64_t address = 0;
  // The event's size: for blocks the size the job asked for (the allocator
  // trace records requested sizes), for segments and driver memory the size.
  uint64_t size = 0;
  // Blocks: the block's size in the allocator snapshot that holds it (what
  // `allocated` counts), 0 when no snapshot does.
  uint64_t block_size = 0;
  uint64_t stream = 0;
  // Event indices (MemoryHistory::events()); kNoEvent: not in the history
  // (birth: before the seed or the recording; frees: still live at the end).
  uint32_t birth = kNoEvent;
  uint32_t free_requested = kNoEvent;  // blocks; driver frees request and complete at once
  uint32_t free_completed = kNoEvent;
  uint32_t pool = kNoPool;
  uint32_t stack = kNoStack;  // LifetimeTable::stacks()
  // Position of birth and end as "before point i" (MemoryEvent::interval):
  // born in interval birth_interval; freed in interval end_interval
  // (UINT32_MAX: never freed in the history).
  uint32_t birth_interval = 0;
  uint32_t end_interval = UINT32_MAX;
  // Interval of the free request (a block stops counting as allocated then,
  // though its memory is held until the free completes).
  uint32_t request_interval = UINT32_MAX;
  uint16_t library = kNoLibrary;  // driver level: the calling library
  int16_t device = -1;
  LifetimeLevel level = LifetimeLevel::kBlock;
  PoolSource source = PoolSource::kTrace;

  // The bytes it holds: the block size where known, else the requested size
  // rounded up to the allocator's 512-byte granularity; segments and driver
  // memory their size.
  uint64_t bytes() const {
    if (level != LifetimeLevel::kBlock) return size;
    return block_size != 0 ? block_size : (size + 511) / 512 * 512;
  }
  // Live at point p (0-based by sequence: interval p ends at it).
  bool liveAt(size_t point) const { return birth_interval <= point && end_interval > point; }
  // Allocated at point p: born, and not yet freed by the job.
  bool allocatedAt(size_t point) const {
    return birth_interval <= point && request_interval > point && end_interval > point;
  }
};

// Where a stack comes from: a native_stack record (driver allocations,
// grouped by hash) or an allocator snapshot's block (python, by blob).
struct StackRef {
  bool native = false;
  uint64_t hash = 0;  // native
  uint64_t blob = 0;  // 0: not stored
};

struct LifetimeOptions {
  // Index into MemoryHistory::snapshots() to start from, or kNoSnapshot to
  // start at the beginning of the recording.
  uint32_t seed = kNoSnapshot;
  // The interval the seed's point ends (its blocks are born at or before).
  uint32_t seed_interval = 0;
};

class LifetimeTable {
 public:
  const std::vector<Lifetime>& lifetimes() const { return lifetimes_; }
  // stacks()[0] is "none".
  const std::vector<StackRef>& stacks() const { return stacks_; }

 private:
  friend class LifetimeReconstruction;
  std::vector<Lifetime> lifetimes_;
  std::vector<StackRef> stacks_{StackRef{}};
};

LifetimeTable reconstructLifetimes(const MemoryHistory& history,
                                   const LifetimeOptions& options = {});

// The stack as text: up to `depth` frames, innermost first, joined by " < "
// ("libc10_cuda.so+0x1234", "forward (model.py:12)"); "-" for none. A
// PyTorch stack with Python frames shows only those; one without shows its
// C++ frames from the first outside PyTorch's recorder and allocator, each
// function without its argument list.
std::string stackText(const Bundle& bundle, const StackRef& stack, size_t depth);
// The text of every stack of `table` (index for index), for the renderers.
std::vector<std::string> stackTexts(const Bundle& bundle, const LifetimeTable& table, size_t depth);

// Index of the point named `name` in the history's intervals (interval
// index = point index), or '#N' for ordinal N; throws AnalyzeError listing
// the points.
size_t historyPointIndex(const Bundle& bundle, const MemoryHistory& history,
                         const std::string& name);

// The snapshot taken for point index `point`, or kNoSnapshot.
uint32_t snapshotAtPoint(const MemoryHistory& history, size_t point);

}  // namespace tcgd::analyze
