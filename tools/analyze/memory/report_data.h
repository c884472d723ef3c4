// The figures behind `memory report`'s plots (report/memory/html_report.h):
// per point the reserved and allocated bytes of every (device, pool) and the
// residual, the residual split, and the top growth sites between consecutive
// points, by pool (from the history model) and by allocation stack (from the
// snapshots' allocated blocks where they carry stacks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "memory/memory_summary.h"
#include "model/memory_history.h"

namespace tcgd::analyze {

struct PlotSeries {
  std::string name;  // "(1,0) allocated", "device 1 (0,0) reserved", "residual"
  std::vector<std::optional<int64_t>> values;  // one per point
};

struct GrowthSite {
  std::string interval;  // MemoryHistory::intervalName
  // "(1,0)", or by stack its innermost frames and the pool ("forward
  // (model.py:12) < step (train.py:40) (1,0)"); "device D " first when several.
  std::string site;
  uint64_t stack = 0;  // by stack: the stack's blob id (memory stacks, JSON)
  // By pool: bytes allocated and frees completed in the interval, and the
  // allocations. By stack: bytes held at the later snapshot and at the
  // earlier one, and the blocks held at the later one.
  uint64_t allocated = 0;
  uint64_t freed = 0;
  uint64_t allocations = 0;
  int64_t growth() const { return static_cast<int64_t>(allocated) - static_cast<int64_t>(freed); }
};

struct MemoryReportData {
  std::string bundle;  // path
  bool complete = false;  // Bundle::complete()
  std::string end_reason;
  std::vector<std::string> points;          // point names, in point order
  std::vector<PlotSeries> pool_memory;      // per (device, pool): reserved, allocated; residual
  std::vector<PlotSeries> residual_split;   // "outside LIB", "other processes", "rest"
  std::vector<GrowthSite> growth_by_pool;   // growth > 0, largest first
  std::vector<GrowthSite> growth_by_stack;  // idem; empty when no snapshot has stacks
};

// `history` may be null (no allocator history): growth by pool is empty then.
MemoryReportData collectReportData(const Bundle& bundle, const MemorySummary& summary,
                                   const MemoryHistory* history);

}  // namespace tcgd::analyze
