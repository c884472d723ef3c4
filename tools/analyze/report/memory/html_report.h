// `memory report`'s figures and its self-contained report.html: the report
// tree of every point (device -> CUDA used -> residual split + allocator ->
// pools -> streams) and three plots drawn as inline SVG by this code (no
// script library, no network):
//  - pool-memory: reserved and allocated bytes per (device, pool) at each
//    point with a snapshot, and the residual (CUDA used - reserved) per device;
//  - residual-split: the residual per point, stacked as outside the
//    allocator by library, other processes and the rest;
//  - growth-by-pool / growth-by-stack: the top growth sites between
//    consecutive points (allocations minus completed frees per pool, from the
//    history model; per allocation stack, from the snapshots' allocated
//    blocks where they carry stacks).
// Every plot carries its data for machines: <svg data-plot="NAME"> holds one
// element per series with data-series="NAME" and data-values="v0,v1,..."
// (exact bytes, empty where a point has no value); growth bars carry
// data-site and data-value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "memory/leaks.h"
#include "model/memory_history.h"
#include "memory/memory_summary.h"
#include "memory/phases.h"

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
  std::vector<std::string> points;          // point names, in point order
  std::vector<PlotSeries> pool_memory;      // per (device, pool): reserved, allocated; residual
  std::vector<PlotSeries> residual_split;   // "outside LIB", "other processes", "rest"
  std::vector<GrowthSite> growth_by_pool;   // growth > 0, largest first
  std::vector<GrowthSite> growth_by_stack;  // idem; empty when no snapshot has stacks
};

// `history` may be null (no allocator history): growth by pool is empty then.
MemoryReportData collectReportData(const Bundle& bundle, const MemorySummary& summary,
                                   const MemoryHistory* history);

// What `memory report` adds from other analyses, when it ran them.
struct ReportFindings {
  // memory leaks' findings; null when it did not run (no allocator snapshot).
  const std::vector<LeakFinding>* leaks = nullptr;
  // memory compare-phases of the --baseline and --candidate phases; null
  // when none were given.
  const PhasesComparison* phases = nullptr;
};

// The whole page. `top` caps the growth bars of each plot and the ranked
// phase rows.
std::string htmlReport(const Bundle& bundle, const MemorySummary& summary,
                       const MemoryReportData& data, size_t top, const ReportFindings& findings);

// "&amp;" for '&', and so on for < > " '.
std::string htmlEscape(std::string_view text);

}  // namespace tcgd::analyze
