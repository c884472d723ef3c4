// Growth between two points, attributed to the allocations that make it
// (`memory attribute`, docs/memory.md): per device and pool, the blocks born
// between P1 and P2 and still allocated at P2 (+ their size) and the blocks
// allocated at P1 that the job freed before P2 (- their size). Their sum is
// the pool's change of allocated bytes; it is set beside the change the two
// allocator snapshots show, with the difference when they disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "bundle/bundle.h"
#include "memory/lifetimes.h"
#include "memory/memory_summary.h"
#include "model/memory_history.h"

namespace tcgd::analyze {

struct AttributedLifetime {
  uint32_t lifetime = 0;  // in Attribution::table
  int64_t bytes = 0;      // +size: born and still allocated; -size: freed
};

struct PoolGrowth {
  int16_t device = 0;
  uint32_t pool = kNoPool;
  uint64_t grown = 0, grown_blocks = 0;        // born, still allocated at P2
  uint64_t released = 0, released_blocks = 0;  // allocated at P1, freed by P2
  int64_t attributed() const { return static_cast<int64_t>(grown) - static_cast<int64_t>(released); }
  // Allocated bytes at P2 minus at P1 from the snapshots (both needed).
  std::optional<int64_t> snapshot_growth;
  std::optional<uint64_t> allocated_before, allocated_after;
};

struct Attribution {
  size_t first = 0, last = 0;  // point indices
  std::string seed_point;      // the snapshot reconstruction started from ("" none)
  LifetimeTable table;
  std::vector<PoolGrowth> pools;            // by device, pool
  std::vector<AttributedLifetime> entries;  // largest |bytes| first
};

// Needs complete history in (first, last]: refuses by name otherwise.
Attribution attributeGrowth(const MemoryHistory& history, const MemorySummary& summary,
                            size_t first, size_t last);

}  // namespace tcgd::analyze
