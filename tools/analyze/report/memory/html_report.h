// `memory report`'s self-contained report.html: the report
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

#include "memory/memory_summary.h"
#include "memory/phases.h"
#include "memory/report_data.h"
#include "report/memory/leaks_report.h"

namespace tcgd::analyze {

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
std::string htmlReport(const MemorySummary& summary, const MemoryReportData& data, size_t top,
                       const ReportFindings& findings);

// "&amp;" for '&', and so on for < > " '.
std::string htmlEscape(std::string_view text);

}  // namespace tcgd::analyze
